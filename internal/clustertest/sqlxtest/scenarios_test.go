package sqlxtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// Create, read, update and delete through sqlx's helpers, with the connections
// spread over every proxy.
func TestCRUDOverEveryProxy(t *testing.T) {
	eachBalance(t, crudOverEveryProxy)
}

func crudOverEveryProxy(t *testing.T, balance string) {
	e := setup(t, balance, quiet()...)
	e.db.SetMaxIdleConns(0) // every operation dials, so each one is a fresh pick
	for i := range 12 {
		it := item{Name: fmt.Sprintf("item-%02d", i), Qty: i}
		if _, err := e.db.NamedExec(e.q("INSERT INTO {t} (name, qty) VALUES (:name, :qty)"), it); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	var got item
	if err := e.db.Get(&got, e.q("SELECT * FROM {t} WHERE name = ?"), "item-07"); err != nil || got.Qty != 7 || got.ID == 0 {
		t.Fatalf("get: %+v, %v", got, err)
	}
	res, err := e.db.Exec(e.q("UPDATE {t} SET qty = qty + 100 WHERE qty >= ?"), 6)
	if n, _ := res.RowsAffected(); err != nil || n != 6 {
		t.Fatalf("update: %d rows, %v", n, err)
	}
	q, args, err := sqlx.In(e.q("SELECT * FROM {t} WHERE name IN (?) ORDER BY id"), []string{"item-06", "item-08", "item-11"})
	if err != nil {
		t.Fatal(err)
	}
	var some []item
	if err := e.db.Select(&some, e.db.Rebind(q), args...); err != nil || len(some) != 3 || some[0].Qty != 106 || some[2].Qty != 111 {
		t.Fatalf("select with In: %+v, %v", some, err)
	}
	res, err = e.db.Exec(e.q("DELETE FROM {t} WHERE qty < ?"), 6)
	if n, _ := res.RowsAffected(); err != nil || n != 6 {
		t.Fatalf("delete: %d rows, %v", n, err)
	}
	if n := e.count(t); n != 6 {
		t.Fatalf("count after delete = %d, want 6", n)
	}
	adaptertest.EveryProxyServed(t, e.cl)
	adaptertest.NoFatalErrors(t, e.c)
}

// A transaction commits; one failing midway (duplicate key) rolls back and the
// pool stays usable.
func TestTransactionCommitsAndRollsBack(t *testing.T) {
	eachBalance(t, transactionCommitsAndRollsBack)
}

func transactionCommitsAndRollsBack(t *testing.T, balance string) {
	e := setup(t, balance, quiet()...)
	insert := e.q("INSERT INTO {t} (id, name, qty) VALUES (:id, :name, :qty)")
	tx, err := e.db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []item{{1, "a", 1}, {2, "b", 2}} {
		if _, err := tx.NamedExec(insert, it); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(e.q("UPDATE {t} SET qty = 10 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}

	tx, err = e.db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.NamedExec(insert, item{3, "c", 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.NamedExec(insert, item{1, "dup", 4}); mysqlNumber(err) != 1062 {
		t.Fatalf("duplicate insert returned %v, want error 1062", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}

	var rows []item
	if err := e.db.Select(&rows, e.q("SELECT * FROM {t} ORDER BY id")); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Qty != 10 || rows[1].Name != "b" {
		t.Fatalf("rows = %+v, want a(10) and b only", rows)
	}
	if _, err := e.db.NamedExec(insert, item{3, "c", 3}); err != nil {
		t.Fatalf("pool unusable after rollback: %v", err)
	}
	adaptertest.NoFatalErrors(t, e.c)
}

// A fatal error inside a transaction, which the application rolls
// back; its connection is not used again.
func TestFatalErrorInTransactionRetiresConnection(t *testing.T) {
	eachBalance(t, fatalErrorInTransactionRetiresConnection)
}

func fatalErrorInTransactionRetiresConnection(t *testing.T, balance string) {
	e := setup(t, balance, quiet()...)
	at := e.onlyConn(t)
	p := e.cl.Proxy(at)
	before, closed := e.node(t, at), closedConns(e.c, p)
	tx, err := e.db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.q("INSERT INTO {t} (id, name, qty) VALUES (?, ?, ?)"), 1, "a", 1); err != nil {
		t.Fatal(err)
	}
	p.FailNext(1, errInitializing)
	var got item
	if err := tx.Get(&got, e.q("SELECT * FROM {t} WHERE id = ?"), 1); mysqlNumber(err) != 8001 {
		t.Fatalf("get in the transaction returned %v, want error 8001", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	after := e.node(t, at)
	if after.Retired != before.Retired+1 || after.FatalErrors != before.FatalErrors+1 {
		t.Fatalf("retired %d→%d, fatal %d→%d; want both +1", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	waitForClose(t, e.c, p, closed)
	if n := e.count(t); n != 0 {
		t.Fatalf("%d rows after the rollback, want 0", n)
	}
}

// A non-fatal error fails its statement only; the connection is reused.
func TestNonFatalErrorKeepsConnection(t *testing.T) {
	eachBalance(t, nonFatalErrorKeepsConnection)
}

func nonFatalErrorKeepsConnection(t *testing.T, balance string) {
	e := setup(t, balance, quiet()...)
	at := e.onlyConn(t)
	p := e.cl.Proxy(at)
	before, dials := e.node(t, at), p.TotalConns()
	p.FailNext(1, errNoTable)
	var got []item
	if err := e.db.Select(&got, e.q("SELECT * FROM {t}")); mysqlNumber(err) != 1146 {
		t.Fatalf("select returned %v, want error 1146", err)
	}
	if n := e.count(t); n != 0 {
		t.Fatalf("count = %d", n)
	}
	after := e.node(t, at)
	if after.Retired != before.Retired || after.FatalErrors != before.FatalErrors {
		t.Fatalf("retired %d→%d, fatal %d→%d; want unchanged", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	if p.OpenConns() != 1 || p.TotalConns() != dials {
		t.Fatalf("proxy has %d open connections after %d dials (was 1 after %d): the connection was not reused",
			p.OpenConns(), p.TotalConns(), dials)
	}
}

// A fatal error (8001) once: one error for the application, the connection is
// retired and closed, the next statement succeeds.
func TestFatalErrorOnceRetiresConnection(t *testing.T) {
	eachBalance(t, fatalErrorOnceRetiresConnection)
}

func fatalErrorOnceRetiresConnection(t *testing.T, balance string) {
	e := setup(t, balance, quiet()...)
	at := e.onlyConn(t)
	p := e.cl.Proxy(at)
	before, closed := e.node(t, at), closedConns(e.c, p)
	p.FailNext(1, errInitializing)
	errs := 0
	var got []item
	if err := e.db.Select(&got, e.q("SELECT * FROM {t}")); err != nil {
		errs++
		if mysqlNumber(err) != 8001 {
			t.Fatalf("select returned %v, want error 8001", err)
		}
	}
	waitForClose(t, e.c, p, closed)
	if _, err := e.db.NamedExec(e.q("INSERT INTO {t} (name, qty) VALUES (:name, :qty)"), item{Name: "a", Qty: 1}); err != nil {
		errs++
	}
	if n := e.count(t); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
	if errs != 1 {
		t.Fatalf("%d application-visible errors, want 1", errs)
	}
	after := e.node(t, at)
	if after.Retired != before.Retired+1 || after.FatalErrors != before.FatalErrors+1 {
		t.Fatalf("retired %d→%d, fatal %d→%d; want both +1", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	if after.State != lbd.StateUp {
		t.Fatalf("proxy state %v after one fatal error, want up", after.State)
	}
}

// A proxy answering 8001 to everything goes down after at most the threshold of
// application errors, the others carry the traffic, and it comes back once healed.
func TestFailingProxyGoesDownAndRecovers(t *testing.T) {
	eachBalance(t, failingProxyGoesDownAndRecovers)
}

func failingProxyGoesDownAndRecovers(t *testing.T, balance string) {
	e := setup(t, balance, fast()...)
	e.db.SetMaxIdleConns(0) // every statement is a fresh pick, so the bad proxy gets traffic
	bad := e.cl.Proxy(1)
	good0, good2 := e.cl.Proxy(0).Statements(), e.cl.Proxy(2).Statements()
	bad.FailNext(-1, errInitializing)
	errs := 0
	for i := range 200 {
		var n int
		if err := e.db.Get(&n, e.q("SELECT COUNT(*) FROM {t} WHERE qty >= ?"), i); err != nil {
			if mysqlNumber(err) != 8001 {
				t.Fatalf("statement %d: %v", i, err)
			}
			errs++
		}
	}
	if errs > lbd.DefaultFatalErrorThreshold {
		t.Fatalf("%d application-visible errors, want at most %d", errs, lbd.DefaultFatalErrorThreshold)
	}
	waitFor(t, 5*time.Second, "the failing proxy to go down", func() bool { return e.node(t, 1).State == lbd.StateDown })
	if e.cl.Proxy(0).Statements() == good0 || e.cl.Proxy(2).Statements() == good2 {
		t.Fatal("the healthy proxies did not carry the traffic")
	}
	bad.FailNext(0, nil)
	waitFor(t, 5*time.Second, "the healed proxy to come back up", func() bool { return e.node(t, 1).State == lbd.StateUp })
	bad.ResetCounters()
	waitFor(t, 5*time.Second, "the healed proxy to serve the application again", func() bool {
		e.count(t)
		return servedTable(bad.Queries(), e.table)
	})
}
