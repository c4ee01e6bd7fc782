// Package adaptertest holds what the GORM and sqlx integration tests share: the scenarios both
// run, each through its own library's calls (RunScenarios, over an Adapter), the cluster,
// connector and table a test starts from (NewEnv), connector options, the errors the proxies
// inject, the balance modes each scenario runs in, and the checks every scenario ends with.
// (lbd's own tests cannot import it: it imports lbd.)
package adaptertest

import (
	"database/sql"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/lbd-go/lbd"
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

// Main runs a test binary's tests (TestMain's m) and then fails it if a goroutine is left over,
// other than those ignore lets through: every cluster, connector and DB a test opens is closed
// before it ends. Broken connections are the point of several tests; go-sql-driver is kept
// from printing about each one.
func Main(m *testing.M, ignore ...goleak.Option) {
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	goleak.VerifyTestMain(m, ignore...)
}

// Item is the row type of the scenario tables (see Env.CreateTable). The db tags are sqlx's;
// GORM maps the fields to the same columns by its own naming rules.
type Item struct {
	ID   int64  `db:"id"`
	Name string `db:"name"`
	Qty  int    `db:"qty"`
}

// Env is one test's cluster of three proxies, the connector balancing over it, the pool under
// the library's handle and the test's table.
type Env struct {
	Cluster   *lbdtest.Cluster
	Connector *lbd.Connector
	DB        *sql.DB // set by the library's setup once it has opened its handle over Connector
	Table     string
	Balance   string // the balance DSN parameter: "connection" or "statement"
}

// NewEnv starts a 3-proxy cluster and a connector over it in the given balance mode, with opts,
// and names a fresh table prefix_N for the test. The library's setup opens its handle over
// Connector (closing it at test end closes the connector), sets DB and calls CreateTable.
func NewEnv(t testing.TB, balance, prefix string, opts ...lbd.Option) *Env {
	t.Helper()
	cl := lbdtest.NewCluster(t, 3)
	c, err := lbd.NewConnector(cl.DSN("timeout=5s&balance="+balance), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Cluster: cl, Connector: c, Table: fmt.Sprintf("%s_%d", prefix, rand.Uint64()%1_000_000_000), Balance: balance}
}

// CreateTable creates the test's table (columns id, name and qty, as Item) with exec, a
// statement run through the library under test, and drops it at test end, once every proxy has
// stopped failing statements. Call it after registering the handle's Close with t.Cleanup, so
// that the table is dropped before the handle closes.
func (e *Env) CreateTable(t testing.TB, exec func(query string) error) {
	t.Helper()
	if err := exec("CREATE TABLE " + e.Table + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64) NOT NULL, qty INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range e.Cluster.Proxies() {
			p.FailNext(0, nil)
		}
		if err := exec("DROP TABLE IF EXISTS " + e.Table); err != nil {
			t.Errorf("drop %s: %v", e.Table, err)
		}
	})
}

// FixedTable makes name the test's table, for a library whose own code names its tables (ent's
// generated code): the test holds a lock named after it on the backend while it runs
// (HoldLock), so that runs against one server wait for each other, and a table that a killed
// run left behind is dropped. Call it before CreateTable.
func (e *Env) FixedTable(t testing.TB, name string) {
	t.Helper()
	direct := BackendDB(t, e.Cluster)
	HoldLock(t, direct, name)
	if _, err := direct.Exec("DROP TABLE IF EXISTS " + name); err != nil {
		t.Fatal(err)
	}
	e.Table = name
}

// ContainsAll reports whether s contains every one of parts.
func ContainsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

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
// mode every statement is balanced, and a session's pin ends when database/sql hands the
// connection out again, so the node list keeps the first proxy alone: the one physical
// connection statement mode then keeps is there.
func OnlyConn(t testing.TB, db *sql.DB, c *lbd.Connector, cl *lbdtest.Cluster, balance string, open func()) int {
	t.Helper()
	db.SetMaxOpenConns(1)
	if balance == "statement" {
		if err := c.SetNodes([]string{cl.Proxy(0).Addr()}); err != nil {
			t.Fatal(err)
		}
	}
	open()
	var addr string
	testkit.WaitFor(t, 5*time.Second, "exactly one open connection", func() bool {
		total := 0
		for _, ns := range c.Stats().Nodes {
			if ns.Open > 0 {
				total += ns.Open
				addr = ns.Addr
			}
		}
		return total == 1
	})
	for i, p := range cl.Proxies() {
		if p.Addr() == addr {
			return i
		}
	}
	t.Fatalf("the open connection's node %s is none of the cluster's proxies", addr)
	return -1
}
