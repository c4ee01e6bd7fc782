package etcd_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
)

// TestMain fails the run when any goroutine outlives the tests: the embedded etcd servers and
// their clients stop cleanly, so no ignore list is needed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sourceGoroutines counts goroutines running this package's code, right now: Close must have
// waited for all of them.
func sourceGoroutines() int { return testkit.GoroutinesIn("github.com/lbd-go/lbd/nodes/etcd") }

// Shared helpers, under the names these tests use.
type (
	logs    = testkit.Logs
	updates = testkit.Updates
)

var waitFor = testkit.WaitFor

// fullReads is a wall clock that counts the source's periodic full reads of the key: the
// first timer a source makes is its refresh timer, and follow resets it after each read ends.
type fullReads struct {
	mu      sync.Mutex
	refresh *countedTimer // the first timer made
	n       atomic.Int64  // resets of the refresh timer: full reads done
}

func (c *fullReads) Now() time.Time { return time.Now() }

func (c *fullReads) NewTimer(d time.Duration) nodes.Timer {
	t := &countedTimer{t: time.NewTimer(d)}
	c.mu.Lock()
	if c.refresh == nil {
		c.refresh, t.resets = t, &c.n
	}
	c.mu.Unlock()
	return t
}

// wait waits until n more full reads have ended.
func (c *fullReads) wait(t testing.TB, n int64, what string) {
	t.Helper()
	from := c.n.Load()
	waitFor(t, 5*time.Second, what, func() bool { return c.n.Load() >= from+n })
}

// countedTimer is a wall-clock timer that counts its resets in resets, when set.
type countedTimer struct {
	t      *time.Timer
	resets *atomic.Int64
}

func (c *countedTimer) C() <-chan time.Time { return c.t.C }
func (c *countedTimer) Stop() bool          { return c.t.Stop() }
func (c *countedTimer) Reset(d time.Duration) {
	c.t.Reset(d)
	if c.resets != nil {
		c.resets.Add(1)
	}
}
