package clusterkit

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// Quiet keeps the background loops out of a test's way: no probe or rebalance round runs
// within an hour, so the proxies' own connection counters show application connections only.
func Quiet() []lbd.Option {
	return []lbd.Option{
		lbd.WithCheckHealthInterval(time.Hour),
		lbd.WithCheckBalanceInterval(time.Hour),
		lbd.WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
	}
}

// Fast returns options for loops that run in milliseconds, logging to logs; jitter 0 puts
// every node's probes in the same phase, which makes "one hung probe does not delay another"
// visible.
func Fast(health, timeout, balance time.Duration, logs *testkit.Logs) []lbd.Option {
	return []lbd.Option{
		lbd.WithCheckHealthInterval(health),
		lbd.WithCheckHealthTimeout(timeout),
		lbd.WithCheckBalanceInterval(balance),
		lbd.WithWarmup(0), // these tests judge probes and rebalancing; slow start has its own
		lbd.WithJitter(func(time.Duration) time.Duration { return 0 }),
		lbd.WithLogger(logs.Logger()),
	}
}

// DiscardLogger is a logger that writes nowhere.
func DiscardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// OpenDB opens a *sql.DB through a new Connector over the cluster; both close at test end.
func OpenDB(t testing.TB, cl *lbdtest.Cluster, params string, opts ...lbd.Option) (*sql.DB, *lbd.Connector) {
	t.Helper()
	return OpenDSN(t, cl.DSN(params), opts...)
}

// OpenDSN opens a *sql.DB through a new Connector on dsn, logging nowhere unless opts give a
// logger, and waits for the Connector's first node list (its source starts in the
// background); both close at test end.
func OpenDSN(t testing.TB, dsn string, opts ...lbd.Option) (*sql.DB, *lbd.Connector) {
	t.Helper()
	opts = append([]lbd.Option{lbd.WithLogger(DiscardLogger())}, opts...)
	c, err := lbd.NewConnector(dsn, opts...)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	testkit.Ready(t, c)
	return db, c
}

// DropOnBackend drops tbl at the end of the test straight on the backend, bounded in time: the
// MariaDB database is shared, and by then the test may have closed its DB or stopped every
// proxy.
func DropOnBackend(t *testing.T, cl *lbdtest.Cluster, tbl string) {
	t.Cleanup(func() {
		direct, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", cl.User(), cl.Password(), cl.BackendAddr(), cl.Database()))
		if err != nil {
			t.Errorf("dropping %s: %v", tbl, err)
			return
		}
		defer direct.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := direct.ExecContext(ctx, "DROP TABLE IF EXISTS "+tbl); err != nil {
			t.Errorf("dropping %s: %v", tbl, err)
		}
	})
}

// OnMariaDB reports whether lbdtest's clusters relay to a real server (lbdtest.EnvBackendDSN,
// LBD_TEST_MYSQL_DSN) rather than to the in-memory engine.
func OnMariaDB() bool { return os.Getenv(lbdtest.EnvBackendDSN) != "" }
