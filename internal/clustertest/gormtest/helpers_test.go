package gormtest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/gormplugin"
	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// item is the row type of the test tables.
type item = adaptertest.Item

var (
	errInitializing = adaptertest.ErrInitializing
	quiet           = adaptertest.Quiet
	fast            = adaptertest.Fast
	eachBalance     = adaptertest.EachBalance
	containsAll     = adaptertest.ContainsAll
)

// recLogger is a GORM logger that keeps what is logged at error and warn level.
type recLogger struct {
	mu     sync.Mutex
	errors []string
}

func (l *recLogger) LogMode(logger.LogLevel) logger.Interface     { return l }
func (l *recLogger) Info(context.Context, string, ...interface{}) {}
func (l *recLogger) Warn(context.Context, string, ...interface{}) {}
func (l *recLogger) Trace(context.Context, time.Time, func() (string, int64), error) {
}

func (l *recLogger) Error(_ context.Context, msg string, data ...interface{}) {
	l.mu.Lock()
	l.errors = append(l.errors, fmt.Sprintf(msg, data...))
	l.mu.Unlock()
}

// lbdErrors returns the plugin's lines.
func (l *recLogger) lbdErrors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.errors {
		if strings.HasPrefix(e, "lbd: ") {
			out = append(out, e)
		}
	}
	return out
}

// env is one test's cluster, connector and GORM handle.
type env struct {
	shared  *adaptertest.Env // the same cluster, connector, pool and table, for the shared scenarios
	cl      *lbdtest.Cluster
	c       *lbd.Connector
	db      *gorm.DB
	sqlDB   *sql.DB
	log     *recLogger
	table   string
	balance string // the balance DSN parameter: "connection" or "statement"
}

// setup starts a 3-proxy cluster and opens GORM over it through Dialector and the Plugin
// (plugin settings from p; its Connector is filled in) in the given balance mode, with a fresh
// table. Everything is released at test end.
func setup(t *testing.T, balance string, p gormplugin.Plugin, opts ...lbd.Option) *env {
	t.Helper()
	return setupWith(t, balance, &gorm.Config{}, p, opts...)
}

// setupWith is setup with a GORM configuration of the test's own; its Logger is replaced.
func setupWith(t *testing.T, balance string, cfg *gorm.Config, p gormplugin.Plugin, opts ...lbd.Option) *env {
	t.Helper()
	ae := adaptertest.NewEnv(t, balance, "gormplugin", opts...)
	rec := &recLogger{}
	cfg.Logger = rec
	db, err := gorm.Open(gormplugin.Dialector(ae.Connector), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlDB.Close() })
	p.Connector = ae.Connector
	if err := db.Use(&p); err != nil {
		t.Fatal(err)
	}
	ae.DB = sqlDB
	ae.CreateTable(t, func(query string) error { return db.Exec(query).Error })
	return &env{shared: ae, cl: ae.Cluster, c: ae.Connector, db: db, sqlDB: sqlDB, log: rec, table: ae.Table, balance: balance}
}

// tbl starts a statement on the test's table.
func (e *env) tbl() *gorm.DB { return e.db.Table(e.table) }

// count returns the rows of the test's table.
func (e *env) count(t *testing.T) int64 {
	t.Helper()
	var n int64
	if err := e.tbl().Count(&n).Error; err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// node returns the Stats entry of proxy i.
func (e *env) node(t *testing.T, i int) lbd.NodeStats { return adaptertest.Node(t, e.c, e.cl, i) }

// onlyConn limits the pool to one open connection and returns the index of its proxy.
func (e *env) onlyConn(t *testing.T) int {
	return adaptertest.OnlyConn(t, e.sqlDB, e.c, e.cl, e.balance, func() { e.count(t) })
}

var waitFor = testkit.WaitFor

var (
	mysqlNumber  = testkit.MySQLNumber
	closedConns  = clusterkit.ClosedConns
	waitForClose = clusterkit.WaitForClose
)
