package sqlxtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/sqlxadapter"
)

// item is the row type of the scenario tables.
type item struct {
	ID   int64  `db:"id"`
	Name string `db:"name"`
	Qty  int    `db:"qty"`
}

var (
	errInitializing = adaptertest.ErrInitializing
	errNoTable      = adaptertest.ErrNoTable
	quiet           = adaptertest.Quiet
	fast            = adaptertest.Fast
	eachBalance     = adaptertest.EachBalance
)

// env is one test's cluster, connector and sqlx handle.
type env struct {
	cl      *lbdtest.Cluster
	c       *lbd.Connector
	db      *sqlx.DB
	table   string
	balance string // the balance DSN parameter: "connection" or "statement"
}

// setup starts a 3-proxy cluster and opens sqlx over it through NewDb in the given balance
// mode, with a fresh table. Everything is released at test end.
func setup(t *testing.T, balance string, opts ...lbd.Option) *env {
	t.Helper()
	cl := lbdtest.NewCluster(t, 3)
	c, err := lbd.NewConnector(cl.DSN("timeout=5s&balance="+balance), opts...)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlxadapter.NewDb(c)
	t.Cleanup(func() { db.Close() })
	e := &env{cl: cl, c: c, db: db, table: fmt.Sprintf("sqlxadapter_%d", rand.Uint64()%1_000_000_000), balance: balance}
	if _, err := db.Exec("CREATE TABLE " + e.table + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(64) NOT NULL, qty INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range e.cl.Proxies() {
			p.FailNext(0, nil)
		}
		if _, err := e.db.Exec("DROP TABLE IF EXISTS " + e.table); err != nil {
			t.Errorf("drop %s: %v", e.table, err)
		}
	})
	return e
}

// q puts the test's table name in for "{t}".
func (e *env) q(query string) string { return strings.ReplaceAll(query, "{t}", e.table) }

// count returns the rows of the test's table.
func (e *env) count(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.db.Get(&n, e.q("SELECT COUNT(*) FROM {t}")); err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// node returns the Stats entry of proxy i.
func (e *env) node(t *testing.T, i int) lbd.NodeStats { return adaptertest.Node(t, e.c, e.cl, i) }

// onlyConn limits the pool to one open connection and returns the index of its proxy.
func (e *env) onlyConn(t *testing.T) int {
	return adaptertest.OnlyConn(t, e.db.DB, e.c, e.cl, e.balance, func() { e.count(t) })
}

var waitFor = testkit.WaitFor

// servedTable reports whether one of a proxy's recorded statements used table (rather than
// being a probe).
func servedTable(queries []string, table string) bool {
	for _, q := range queries {
		if strings.Contains(q, table) {
			return true
		}
	}
	return false
}

var (
	mysqlNumber  = testkit.MySQLNumber
	closedConns  = clusterkit.ClosedConns
	waitForClose = clusterkit.WaitForClose
)
