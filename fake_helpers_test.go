package lbd

import (
	"io"
	"log/slog"
	"time"

	"github.com/lbd-go/lbd/internal/testkit"
)

// The root package's own tests run against internal/mysqlfake, never against the SQL-engine
// cluster (that would put its modules into every user's module graph); the cluster suites
// live in internal/clustertest. These are the few helpers both kinds share, in the root's
// package.

// quiet keeps the background loops out of a test's way: no probe or rebalance round runs
// within an hour.
func quiet() []Option {
	return []Option{
		WithCheckHealthInterval(time.Hour),
		WithCheckBalanceInterval(time.Hour),
		WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fast returns options for loops that run in milliseconds; jitter 0 puts every node's probes
// in the same phase.
func fast(health, timeout, balance time.Duration, logs *logRecorder) []Option {
	return []Option{
		WithCheckHealthInterval(health),
		WithCheckHealthTimeout(timeout),
		WithCheckBalanceInterval(balance),
		WithJitter(func(time.Duration) time.Duration { return 0 }),
		WithLogger(logs.Logger()),
	}
}

var waitFor = testkit.WaitFor

// logRecorder keeps what lbd logs, for tests that check it.
type logRecorder = testkit.Logs

// nodeState returns addr's state in c's Stats, and false when addr is not there.
func nodeState(c *Connector, addr string) (NodeState, bool) {
	ns, ok := c.Stats().Node(addr)
	return ns.State, ok
}
