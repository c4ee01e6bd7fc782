package lbdtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestAnnounceShutdown: a proxy announcing its shutdown answers statements and new connections
// with 1053 and serves again after Stop and Start.
func TestAnnounceShutdown(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	db.SetMaxIdleConns(1)
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var one int
	if err := conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	p.AnnounceShutdown()
	if !p.ShuttingDown() {
		t.Fatal("ShuttingDown is false after AnnounceShutdown")
	}
	err = conn.QueryRowContext(context.Background(), "SELECT 1").Scan(&one)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1053 || string(me.SQLState[:]) != "08S01" {
		t.Fatalf("statement while shutting down: %v, want 1053 (08S01)", err)
	}
	fresh := openDB(t, c, p.Addr(), "")
	err = fresh.PingContext(context.Background())
	if !errors.As(err, &me) || me.Number != 1053 {
		t.Fatalf("new connection while shutting down: %v, want 1053", err)
	}
	if p.TurnedAway() < 1 {
		t.Errorf("TurnedAway = %d, want at least 1", p.TurnedAway())
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if p.ShuttingDown() {
		t.Fatal("still shutting down after Start")
	}
	waitFor(t, 5*time.Second, "the restarted proxy to serve", func() bool {
		return fresh.PingContext(context.Background()) == nil
	})
}

// TestFailQueries: statements starting with the prefix fail, others are served, and clearing
// the fault serves them again.
func TestFailQueries(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	p.FailQueries("/* ping */", &mysql.MySQLError{Number: 1105, Message: "no probes"})
	var one int
	var me *mysql.MySQLError
	if err := db.QueryRow("/* ping */ SELECT 1").Scan(&one); !errors.As(err, &me) || me.Number != 1105 {
		t.Fatalf("matching statement: %v, want 1105", err)
	}
	if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("other statement: %v", err)
	}
	p.FailQueries("", nil)
	if err := db.QueryRow("/* ping */ SELECT 1").Scan(&one); err != nil {
		t.Fatalf("after clearing: %v", err)
	}
}

// TestDelayQueries: statements starting with the prefix wait the delay, others do not, and
// clearing it serves them at once again.
func TestDelayQueries(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	timed := func(q string) time.Duration {
		t.Helper()
		var one int
		began := time.Now()
		if err := db.QueryRow(q).Scan(&one); err != nil || one != 1 {
			t.Fatalf("%s: %d, %v", q, one, err)
		}
		return time.Since(began)
	}
	timed("SELECT 1") // a connection in the pool
	p.DelayQueries("/* ping */", 300*time.Millisecond)
	if d := timed("/* ping */ SELECT 1"); d < 300*time.Millisecond {
		t.Fatalf("matching statement answered after %v, want at least 300ms", d)
	}
	if d := timed("SELECT 1"); d >= 300*time.Millisecond {
		t.Fatalf("other statement answered after %v, want no delay", d)
	}
	p.DelayQueries("", 0)
	if d := timed("/* ping */ SELECT 1"); d >= 300*time.Millisecond {
		t.Fatalf("after clearing: answered after %v, want no delay", d)
	}
}

// TestStopWithShutdownError: an idle pooled connection finds the 1053 packet waiting; the
// proxy is stopped afterwards.
func TestStopWithShutdownError(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	conn, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitFor(t, 5*time.Second, "the connection accepted", func() bool { return p.OpenConns() == 1 })
	if err := p.StopWithShutdownError(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("the proxy still runs")
	}
	// The client reads the greeting (if the backend sent it in time), then the ERR packet.
	b, _ := io.ReadAll(io.LimitReader(conn, 64<<10))
	if !bytes.Contains(b, []byte("#08S01Server shutdown in progress")) {
		t.Fatalf("the client read %q, want the 1053 packet", b)
	}
}
