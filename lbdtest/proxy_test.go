package lbdtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// pinConn returns one connection of db, closed at test end.
func pinConn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// pingedProxy starts a one-proxy cluster and returns it, its proxy and one connection through
// the proxy, held and already pinged.
func pingedProxy(t *testing.T) (*Cluster, *Proxy, *sql.Conn) {
	t.Helper()
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	conn := pinConn(t, db)
	if err := conn.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, p, conn
}

func TestCounters(t *testing.T) {
	c := NewCluster(t, 2)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	ctx := context.Background()

	if p.OpenConns() != 0 || p.TotalConns() != 0 || p.Statements() != 0 || len(p.Queries()) != 0 {
		t.Fatalf("fresh proxy counters: open=%d total=%d stmts=%d queries=%v",
			p.OpenConns(), p.TotalConns(), p.Statements(), p.Queries())
	}
	conn := pinConn(t, db)
	waitFor(t, 5*time.Second, "one open connection", func() bool { return p.OpenConns() == 1 })
	if p.TotalConns() != 1 {
		t.Fatalf("TotalConns = %d, want 1", p.TotalConns())
	}
	before := p.Statements()

	if _, err := conn.ExecContext(ctx, "SET @lbd_x=1"); err != nil {
		t.Fatal(err)
	}
	if got := p.Statements() - before; got != 1 {
		t.Fatalf("statements after one text query: +%d, want +1", got)
	}
	if q := p.Queries(); len(q) == 0 || q[len(q)-1] != "SET @lbd_x=1" {
		t.Fatalf("Queries = %q, want it to end with the SET", q)
	}

	// A query with arguments is prepared, executed and closed: two
	// statements, one recorded text.
	var v int
	if err := conn.QueryRowContext(ctx, "SELECT ? + 1", 41).Scan(&v); err != nil || v != 42 {
		t.Fatalf("SELECT ? + 1 = %d, %v", v, err)
	}
	if got := p.Statements() - before; got != 3 {
		t.Fatalf("statements after prepared query: +%d, want +3", got)
	}
	if q := p.Queries(); q[len(q)-1] != "SELECT ? + 1" {
		t.Fatalf("last query = %q", q[len(q)-1])
	}
	// Pings are not statements.
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.Statements() - before; got != 3 {
		t.Fatalf("statements after ping: +%d, want +3", got)
	}
	if other := c.Proxy(1); other.Statements() != 0 || other.TotalConns() != 0 {
		t.Fatalf("untouched proxy counted traffic: %d statements, %d conns", other.Statements(), other.TotalConns())
	}

	// Queries returns a copy.
	q := p.Queries()
	q[0] = "changed"
	if p.Queries()[0] == "changed" {
		t.Fatal("Queries shares its storage")
	}

	second := pinConn(t, db)
	waitFor(t, 5*time.Second, "two open connections", func() bool { return p.OpenConns() == 2 })
	if p.TotalConns() != 2 {
		t.Fatalf("TotalConns = %d, want 2", p.TotalConns())
	}
	// Both logins were the DSN's user; a connection as another user is counted apart.
	other, err := sql.Open("mysql", fmt.Sprintf("someone:else@tcp(%s)/%s", p.Addr(), c.Database()))
	if err != nil {
		t.Fatal(err)
	}
	_ = other.PingContext(ctx) // a real server may refuse the user: the login is counted all the same
	_ = other.Close()
	if got, want := p.Logins(), map[string]int64{c.User(): 2, "someone": 1}; !maps.Equal(got, want) {
		t.Fatalf("Logins = %v, want %v", got, want)
	}
	waitFor(t, 5*time.Second, "the other user's connection to close", func() bool { return p.OpenConns() == 2 })

	p.ResetCounters()
	if p.TotalConns() != 0 || p.Statements() != 0 || len(p.Queries()) != 0 || len(p.Logins()) != 0 {
		t.Fatal("ResetCounters left counts behind")
	}
	if p.OpenConns() != 2 {
		t.Fatalf("ResetCounters changed OpenConns to %d", p.OpenConns())
	}

	_ = second.Close()
	_ = conn.Close()
	_ = db.Close()
	waitFor(t, 5*time.Second, "connections to close", func() bool { return p.OpenConns() == 0 })
}

func TestQueriesBounded(t *testing.T) {
	p := &Proxy{}
	for i := range MaxQueries + 5 {
		p.noteStatement([]byte{byte('a' + i%26)}, true)
	}
	p.noteStatement(nil, false)
	q := p.Queries()
	if len(q) != MaxQueries {
		t.Fatalf("len(Queries) = %d, want %d", len(q), MaxQueries)
	}
	// The five oldest were dropped: the first kept is number 5 ('f').
	if q[0] != "f" || q[len(q)-1] != string(rune('a'+(MaxQueries+4)%26)) {
		t.Fatalf("kept %q..%q", q[0], q[len(q)-1])
	}
	if p.Statements() != MaxQueries+6 {
		t.Fatalf("Statements = %d", p.Statements())
	}
	long := make([]byte, maxRecordedQuery+10)
	p.noteStatement(long, true)
	if q := p.Queries(); len(q[len(q)-1]) != maxRecordedQuery {
		t.Fatalf("long text kept at %d bytes", len(q[len(q)-1]))
	}
}

func TestFailNext(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	conn := pinConn(t, db)
	ctx := context.Background()

	initializing := &mysql.MySQLError{Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}, Message: "Server is initializing"}
	p.FailNext(1, initializing)
	initializing.Number = 1 // later changes must not matter

	before := p.Statements()
	_, err := conn.ExecContext(ctx, "SET @lbd_x=1")
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Fatalf("err = %v (%T), want *mysql.MySQLError", err, err)
	}
	if me.Number != 8001 || string(me.SQLState[:]) != "08004" || me.Message != "Server is initializing" {
		t.Fatalf("got error %d %s %q", me.Number, me.SQLState, me.Message)
	}
	if _, err := conn.ExecContext(ctx, "SET @lbd_x=2"); err != nil {
		t.Fatalf("statement after the injected failure: %v", err)
	}
	var x int
	if err := conn.QueryRowContext(ctx, "SELECT @lbd_x").Scan(&x); err != nil || x != 2 {
		t.Fatalf("@lbd_x = %d, %v; want 2 (the failed SET must not reach the server)", x, err)
	}
	if got := p.Statements() - before; got != 3 {
		t.Fatalf("statements = +%d, want +3 (failed ones count)", got)
	}

	// n > 1 fails exactly n statements; a nil error uses the default.
	p.FailNext(2, nil)
	for i := range 2 {
		_, err := conn.ExecContext(ctx, "SET @lbd_d=1")
		if !errors.As(err, &me) || me.Number != 1105 || string(me.SQLState[:]) != "HY000" {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	if _, err := conn.ExecContext(ctx, "SET @lbd_d=1"); err != nil {
		t.Fatalf("third statement: %v", err)
	}

	// n < 0 fails until cancelled.
	p.FailNext(-1, &mysql.MySQLError{Number: 1290, Message: "read only"})
	for range 5 {
		if _, err := conn.ExecContext(ctx, "SET @lbd_d=1"); !errors.As(err, &me) || me.Number != 1290 {
			t.Fatalf("unlimited failure: %v", err)
		}
	}
	p.FailNext(0, nil)
	if _, err := conn.ExecContext(ctx, "SET @lbd_d=1"); err != nil {
		t.Fatalf("after FailNext(0): %v", err)
	}

	// COM_STMT_PREPARE answered with an error.
	p.FailNext(1, initializing)
	if _, err := conn.PrepareContext(ctx, "SELECT ?"); !errors.As(err, &me) || me.Number != 1 {
		t.Fatalf("prepare: %v", err)
	}
	stmt, err := conn.PrepareContext(ctx, "SELECT ? * 2")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	// COM_STMT_EXECUTE answered with an error; the statement and the
	// connection stay usable.
	p.FailNext(1, initializing)
	if err := stmt.QueryRowContext(ctx, 4).Scan(&x); !errors.As(err, &me) || me.Number != 1 {
		t.Fatalf("execute: %v", err)
	}
	if err := stmt.QueryRowContext(ctx, 4).Scan(&x); err != nil || x != 8 {
		t.Fatalf("execute after failure = %d, %v", x, err)
	}

	// Failures are shared by all connections of the proxy.
	other := pinConn(t, db)
	p.FailNext(1, nil)
	if _, err := other.ExecContext(ctx, "SET @lbd_d=1"); err == nil {
		t.Fatal("other connection did not get the failure")
	}
	if _, err := conn.ExecContext(ctx, "SET @lbd_d=1"); err != nil {
		t.Fatalf("first connection: %v", err)
	}
}

func TestStopStart(t *testing.T) {
	c := NewCluster(t, 2)
	p := c.Proxy(0)
	addr := p.Addr()
	db := openDB(t, c, addr, "timeout=2s")
	conn := pinConn(t, db)
	ctx := context.Background()
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("Running after Stop")
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if p.OpenConns() != 0 {
		t.Fatalf("OpenConns after Stop = %d", p.OpenConns())
	}
	if _, err := conn.ExecContext(ctx, "SET @lbd_d=1"); err == nil {
		t.Fatal("existing connection still works after Stop")
	}
	start := time.Now()
	_, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial stopped proxy: %v, want connection refused", err)
	}
	fresh := openDB(t, c, addr, "timeout=2s")
	if err := fresh.PingContext(ctx); err == nil {
		t.Fatal("new connection to a stopped proxy succeeded")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("refusal took %v", d)
	}
	// The other proxy is unaffected.
	if err := openDB(t, c, c.Proxy(1).Addr(), "").PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("second Start: %v", err)
	}
	if !p.Running() || p.Addr() != addr {
		t.Fatalf("after Start: running=%v addr=%s (was %s)", p.Running(), p.Addr(), addr)
	}
	var v int
	if err := fresh.QueryRowContext(ctx, "SELECT 5").Scan(&v); err != nil || v != 5 {
		t.Fatalf("after Start: %d, %v", v, err)
	}
}

func TestHangResume(t *testing.T) {
	c, p, conn := pingedProxy(t)
	ctx := context.Background()

	p.Hang()
	p.Hang() // idempotent
	if !p.Hung() {
		t.Fatal("Hung() = false after Hang")
	}

	// An existing connection stalls until its deadline.
	qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	_, err := conn.ExecContext(qctx, "SET @lbd_d=1")
	cancel()
	if err == nil {
		t.Fatal("statement through a hung proxy succeeded")
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Fatalf("statement failed after %v, want about 300ms (%v)", d, err)
	}

	// New connections are accepted but never see the handshake. The
	// driver's timeout parameter covers only the TCP dial, so the
	// handshake is bounded by readTimeout here.
	total := p.TotalConns()
	fresh := openDB(t, c, p.Addr(), "timeout=300ms&readTimeout=300ms")
	start = time.Now()
	if err := fresh.PingContext(ctx); err == nil {
		t.Fatal("new connection through a hung proxy succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("connection attempt failed after %v", d)
	}
	if p.TotalConns() <= total {
		t.Fatal("hung proxy did not accept the TCP connection")
	}
	// Clients that gave up are noticed even while hung.
	waitFor(t, 5*time.Second, "abandoned connections to close", func() bool { return p.OpenConns() == 0 })

	p.Resume()
	p.Resume() // idempotent
	if p.Hung() {
		t.Fatal("Hung() = true after Resume")
	}
	var v int
	if err := fresh.QueryRowContext(ctx, "SELECT 3").Scan(&v); err != nil || v != 3 {
		t.Fatalf("after Resume: %d, %v", v, err)
	}
}

func TestHangHoldsTrafficUntilResume(t *testing.T) {
	_, p, conn := pingedProxy(t)
	ctx := context.Background()

	// The statement reaches the server; its answer is held while hung.
	type result struct {
		v   int
		err error
	}
	done := make(chan result, 1)
	before := p.Statements()
	go func() {
		var r result
		r.err = conn.QueryRowContext(ctx, "SELECT SLEEP(0.2) + 9").Scan(&r.v)
		done <- r
	}()
	waitFor(t, 5*time.Second, "statement to be seen", func() bool { return p.Statements() > before })
	p.Hang()
	select {
	case r := <-done:
		t.Fatalf("statement finished while hung: %+v", r)
	case <-time.After(500 * time.Millisecond):
	}
	p.Resume()
	select {
	case r := <-done:
		if r.err != nil || r.v != 9 {
			t.Fatalf("after Resume: %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("statement still stalled after Resume")
	}
}

func TestStopWhileHung(t *testing.T) {
	c, p, conn := pingedProxy(t)
	ctx := context.Background()
	p.Hang()
	stalled := make(chan error, 1)
	go func() {
		_, err := conn.ExecContext(ctx, "SET @lbd_d=1")
		stalled <- err
	}()
	waitFor(t, 5*time.Second, "statement to be seen", func() bool { return p.Statements() > 0 })

	stopped := make(chan error, 1)
	go func() { stopped <- p.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop blocked on a hung proxy")
	}
	select {
	case err := <-stalled:
		if err == nil {
			t.Fatal("stalled statement succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stalled statement not released by Stop")
	}

	// Hang survives a restart until Resume.
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if !p.Hung() {
		t.Fatal("restart cleared the hang")
	}
	p.Resume()
	if err := openDB(t, c, p.Addr(), "").PingContext(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLatency(t *testing.T) {
	_, p, conn := pingedProxy(t)
	ctx := context.Background()

	p.SetLatency(100 * time.Millisecond)
	if p.Latency() != 100*time.Millisecond {
		t.Fatalf("Latency() = %v", p.Latency())
	}
	start := time.Now()
	if _, err := conn.ExecContext(ctx, "SET @lbd_d=1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("statement took %v, want at least 100ms", d)
	}
	// Pings are not statements and are not delayed; checking only that
	// they work keeps the test free of upper timing bounds.
	if err := conn.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	// Latency also delays injected failures.
	p.FailNext(1, nil)
	start = time.Now()
	if _, err := conn.ExecContext(ctx, "SET @lbd_d=1"); err == nil {
		t.Fatal("injected failure missing")
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("failed statement took %v, want at least 100ms", d)
	}

	p.SetLatency(-time.Second)
	if p.Latency() != 0 {
		t.Fatalf("negative latency stored as %v", p.Latency())
	}
}

func TestProxiesSnapshot(t *testing.T) {
	c := NewCluster(t, 2)
	ps := c.Proxies()
	ps[0] = nil
	if c.Proxy(0) == nil {
		t.Fatal("Proxies shares its storage")
	}
	if !slices.Equal(c.Addrs(), []string{c.Proxy(0).Addr(), c.Proxy(1).Addr()}) {
		t.Fatal("Addrs out of order")
	}
}

func TestMultiStatements(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "multiStatements=true")
	conn := pinConn(t, db)
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "SET @lbd_a=1; SET @lbd_b=2"); err != nil {
		t.Fatal(err)
	}
	var a, b int
	if err := conn.QueryRowContext(ctx, "SELECT @lbd_a, @lbd_b").Scan(&a, &b); err != nil || a != 1 || b != 2 {
		t.Fatalf("@lbd_a, @lbd_b = %d, %d, %v", a, b, err)
	}
	// One COM_QUERY is one statement for the proxy, whatever it holds.
	if got := p.Statements(); got != 2 {
		t.Fatalf("Statements = %d, want 2", got)
	}
}
