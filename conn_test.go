package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"github.com/lbd-go/lbd/internal/testkit"
	"syscall"
	"testing"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/physical"
)

// TestWrappedConnKeepsOptionalInterfaces type-asserts, on a live connection, every interface
// database/sql and go-sql-driver look for.
func TestWrappedConnKeepsOptionalInterfaces(t *testing.T) {
	srvs := startFakes(t, 1, mysqlfake.Config{})
	db, _ := openFakeDB(t, srvs, "", quiet()...)
	cn := testkit.HoldConns(t, db, 1)[0]
	defer cn.Close()
	err := cn.Raw(func(dc any) error {
		checks := map[string]bool{}
		_, checks["ConnBeginTx"] = dc.(driver.ConnBeginTx)
		_, checks["ConnPrepareContext"] = dc.(driver.ConnPrepareContext)
		_, checks["ExecerContext"] = dc.(driver.ExecerContext)
		_, checks["QueryerContext"] = dc.(driver.QueryerContext)
		_, checks["Pinger"] = dc.(driver.Pinger)
		_, checks["SessionResetter"] = dc.(driver.SessionResetter)
		_, checks["Validator"] = dc.(driver.Validator)
		_, checks["NamedValueChecker"] = dc.(driver.NamedValueChecker)
		for name, ok := range checks {
			if !ok {
				t.Errorf("live connection lacks %s", name)
			}
		}
		w, ok := dc.(*physical.Conn)
		if !ok {
			t.Fatalf("live connection is %T, want *physical.Conn", dc)
		}
		// The socket under go-sql-driver must stay a syscall.Conn for its liveness check.
		t.Run("socket", func(t *testing.T) {
			nodeConns := w.Node().Conns()
			if len(nodeConns) != 1 {
				t.Fatalf("node tracks %d conns, want 1", len(nodeConns))
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := &physical.Socket{}
	if _, ok := any(tc).(syscall.Conn); !ok {
		t.Fatal("physical.Socket is not a syscall.Conn")
	}
}

func TestRetiredConnectionIsDroppedWithoutError(t *testing.T) {
	srvs := startFakes(t, 2, mysqlfake.Config{})
	db, c := openFakeDB(t, srvs, "", quiet()...)
	db.SetMaxOpenConns(1)
	cn := testkit.HoldConns(t, db, 1)[0]

	// Retire while in use, inside a transaction: the transaction must finish untouched.
	tx, err := cn.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var w *physical.Conn
	cn.Raw(func(dc any) error { w = dc.(*physical.Conn); return nil })
	if w.Retire(physical.Rebalance) {
		t.Fatal("retire closed an in-use connection")
	}
	if _, err := tx.Exec("SELECT 1"); err != nil {
		t.Fatalf("statement after retirement: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after retirement: %v", err)
	}
	if got := c.Stats().Open(); got != 1 {
		t.Fatalf("open = %d while the retired connection is still checked out, want 1", got)
	}
	cn.Close() // back to the pool: IsValid says no, database/sql closes it
	if got := c.Stats().Open(); got != 0 {
		t.Fatalf("open = %d after the retired connection returned, want 0", got)
	}

	// Retire while idle: it closes at once, and the next checkout dials afresh without error.
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	idle := 0
	for _, tn := range c.table.Nodes(nil) {
		for _, x := range tn.Payload().Conns() {
			if x.RetireIfIdle(physical.Rebalance) {
				idle++
			}
		}
	}
	if idle != 1 {
		t.Fatalf("want exactly one idle connection to retire, retired %d", idle)
	}
	if got := c.Stats().Open(); got != 0 {
		t.Fatalf("open = %d after retiring the idle connection, want 0", got)
	}
	for i := range 5 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatalf("exec %d after idle retirement: %v", i, err)
		}
	}
	total := uint64(0)
	for _, ns := range c.Stats().Nodes {
		total += ns.Retired
	}
	if total != 2 {
		t.Fatalf("Retired = %d, want 2", total)
	}
}

// A connection database/sql opened but never used may sit in its pool without IsValid ever
// being called; retiring it must close it at once, and its first use must fail before sending.
func TestFreshConnectionIsRetiredAtOnce(t *testing.T) {
	srvs := startFakes(t, 1, mysqlfake.Config{})
	_, c := openFakeDB(t, srvs, "", quiet()...)
	dc, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := dc.(*physical.Conn)
	if !w.Retire(physical.Rebalance) {
		t.Fatal("a fresh connection was not closed at once")
	}
	if got := c.Stats().Nodes[0].Open; got != 0 {
		t.Fatalf("open = %d after retiring the fresh connection", got)
	}
	before := srvs[0].Commands()
	if _, err := w.ExecContext(context.Background(), "SELECT 1", nil); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("use of a retired fresh connection = %v, want driver.ErrBadConn", err)
	}
	if srvs[0].Commands() != before {
		t.Fatal("a command reached the server over a retired connection")
	}
	w.Close()
}
