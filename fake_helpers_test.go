package lbd

import (
	"database/sql"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/testkit"
)

// The root package's own tests run against internal/mysqlfake, never against the SQL-engine
// cluster (that would put its modules into every user's module graph); the cluster suites
// live in internal/clustertest. These are the few helpers both kinds share, in the root's
// package.

// quiet keeps the background loops out of a test's way: no probe or rebalance round runs
// within an hour. The first connection goes to the first listed node (firstListed).
func quiet() []Option {
	return []Option{
		WithCheckHealthInterval(time.Hour),
		WithCheckBalanceInterval(time.Hour),
		WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
		firstListed(),
	}
}

// firstListed makes a Connector's turns among equally loaded nodes start at the first listed
// one, so a test knows where its first connection goes.
func firstListed() Option { return WithRand(func(int) int { return 0 }) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fast returns options for loops that run in milliseconds; jitter 0 puts every node's probes
// in the same phase. The first connection goes to the first listed node (firstListed).
func fast(health, timeout, balance time.Duration, logs *logRecorder) []Option {
	return []Option{
		WithCheckHealthInterval(health),
		WithCheckHealthTimeout(timeout),
		WithCheckBalanceInterval(balance),
		WithJitter(func(time.Duration) time.Duration { return 0 }),
		firstListed(),
		WithLogger(logs.Logger()),
	}
}

var waitFor = testkit.WaitFor

// probeQuery is the text of every probe, for faults and answers aimed at probes alone.
const probeQuery = health.ProbeQuery

// logRecorder keeps what lbd logs, for tests that check it.
type logRecorder = testkit.Logs

// nodeState returns addr's state in c's Stats, and false when addr is not there.
func nodeState(c *Connector, addr string) (NodeState, bool) {
	ns, ok := c.Stats().Node(addr)
	return ns.State, ok
}

// startFakes starts n healthy mysqlfake servers with cfg, closed when the test ends.
func startFakes(t testing.TB, n int, cfg mysqlfake.Config) []*mysqlfake.Server {
	t.Helper()
	srvs := make([]*mysqlfake.Server, n)
	for i := range srvs {
		srvs[i] = mysqlfake.Start(t, cfg)
	}
	return srvs
}

// fakeDSN returns a DSN listing srvs, with params (a query string without "?", may be empty).
func fakeDSN(srvs []*mysqlfake.Server, params string) string {
	addrs := make([]string, len(srvs))
	for i, s := range srvs {
		addrs[i] = s.Addr()
	}
	dsn := "u:p@lb(" + strings.Join(addrs, ",") + ")/db?timeout=2s"
	if params != "" {
		dsn += "&" + params
	}
	return dsn
}

// openFakeDB opens a *sql.DB over srvs through a Connector built with params and opts (lbd's
// logs discarded unless opts set a logger), closed when the test ends.
func openFakeDB(t testing.TB, srvs []*mysqlfake.Server, params string, opts ...Option) (*sql.DB, *Connector) {
	t.Helper()
	c, err := NewConnector(fakeDSN(srvs, params), append([]Option{WithLogger(discardLogger())}, opts...)...)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c
}

// queryLog records every query text a mysqlfake server is asked, answering as DefaultAnswer.
type queryLog struct {
	mu      sync.Mutex
	queries []string
}

func (l *queryLog) answer(q string) *mysqlfake.Result {
	l.mu.Lock()
	l.queries = append(l.queries, q)
	l.mu.Unlock()
	return mysqlfake.DefaultAnswer(q)
}

func (l *queryLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.queries...)
}
