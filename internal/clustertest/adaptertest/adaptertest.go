// Package adaptertest holds what the GORM and sqlx integration tests share: connector options,
// the errors the proxies inject, the balance modes each scenario runs in, and the checks every
// scenario ends with. (lbd's own tests cannot import it: it imports lbd.)
package adaptertest

import (
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// Errors the proxies inject.
var (
	// ErrInitializing is OceanBase's "client must close the connection" answer: fatal.
	ErrInitializing = &mysql.MySQLError{Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}, Message: "Server is initializing"}
	// ErrNoTable fails one statement on a healthy session: not fatal.
	ErrNoTable = &mysql.MySQLError{Number: 1146, SQLState: [5]byte{'4', '2', 'S', '0', '2'}, Message: "Table 'test.nope' doesn't exist"}
)

// Quiet keeps the connector's loops out of the way: no probe or rebalance round runs during a
// test, so the proxies count application statements and connections only, and no probe takes
// an injected failure meant for the application.
func Quiet() []lbd.Option {
	return []lbd.Option{
		lbd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		lbd.WithCheckHealthInterval(time.Hour),
		lbd.WithCheckBalanceInterval(time.Hour),
		lbd.WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
	}
}

// Fast probes every 200 ms, for tests that need nodes to go down and come back. Slow start is
// off: a node that comes back must take connections at once for them.
func Fast() []lbd.Option {
	return []lbd.Option{
		lbd.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
		lbd.WithCheckHealthInterval(200 * time.Millisecond),
		lbd.WithWarmup(0),
		lbd.WithCheckBalanceInterval(time.Hour),
	}
}

// EachBalance runs body as a subtest per value of the balance DSN parameter.
func EachBalance(t *testing.T, body func(t *testing.T, balance string)) {
	for _, balance := range []string{"connection", "statement"} {
		t.Run(balance, func(t *testing.T) { body(t, balance) })
	}
}

// EveryProxyServed fails t for each proxy of cl that relayed no statement.
func EveryProxyServed(t testing.TB, cl *lbdtest.Cluster) {
	t.Helper()
	for i, p := range cl.Proxies() {
		if p.Statements() == 0 {
			t.Errorf("proxy %d served no statement", i)
		}
	}
}

// NoFatalErrors fails t for each node of c that saw a fatal error or retired a connection.
func NoFatalErrors(t testing.TB, c *lbd.Connector) {
	t.Helper()
	for _, ns := range c.Stats().Nodes {
		if ns.FatalErrors != 0 || ns.Retired != 0 {
			t.Errorf("proxy %s: %d fatal errors, %d retired; want none", ns.Addr, ns.FatalErrors, ns.Retired)
		}
	}
}

// Node returns the Stats entry of proxy i of cl.
func Node(t testing.TB, c *lbd.Connector, cl *lbdtest.Cluster, i int) lbd.NodeStats {
	t.Helper()
	ns, ok := c.Stats().Node(cl.Proxy(i).Addr())
	if !ok {
		t.Fatalf("no stats for proxy %d", i)
	}
	return ns
}

// OnlyConn limits db to one connection, makes sure it is open and returns the index of the
// proxy it goes through (from the connector's Stats, which leave probe connections out). open
// runs one statement through the library under test, which opens the connection. In statement
// mode the connection would move from proxy to proxy, so a user variable pins it to one
// physical connection for its life, the proxy whose connection is in use.
func OnlyConn(t testing.TB, db *sql.DB, c *lbd.Connector, cl *lbdtest.Cluster, balance string, open func()) int {
	t.Helper()
	db.SetMaxOpenConns(1)
	if balance == "statement" {
		pin := fmt.Sprintf("SET @lbd_pinned = %d", rand.Int32())
		if _, err := db.Exec(pin); err != nil { // straight through database/sql: an ORM may prepare it
			t.Fatal(err)
		}
		return clusterkit.ProxyThatSaw(t, cl, pin)
	}
	open()
	var at int
	testkit.WaitFor(t, 5*time.Second, "exactly one open connection", func() bool {
		total := 0
		for i, ns := range c.Stats().Nodes {
			if ns.Open > 0 {
				total += ns.Open
				at = i
			}
		}
		return total == 1
	})
	if c.Stats().Nodes[at].Addr != cl.Proxy(at).Addr() {
		t.Fatal("Stats lists the nodes in another order than the cluster")
	}
	return at
}
