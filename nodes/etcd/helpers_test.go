package etcd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

// TestMain fails the run when any goroutine outlives the tests: the embedded etcd servers and
// their clients stop cleanly, so no ignore list is needed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sourceGoroutines counts goroutines running this package's code, right now: Close must have
// waited for all of them.
func sourceGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/lbd-go/lbd/nodes/etcd.") {
			count++
		}
	}
	return count
}

// waitFor polls cond every 5 ms until it holds, failing t when within passes first.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// started is lbd.NewConnector followed by a wait of up to 10 s for the source's first node
// list: it returns NewConnector's error, or else Ready's, closing the Connector when Ready
// fails.
func started(c *lbd.Connector, err error) (*lbd.Connector, error) {
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// logs records what a source logs, as JSON lines; it is safe for concurrent use.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Logger returns a logger writing to l at every level.
func (l *logs) Logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// All returns every line logged.
func (l *logs) All() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// record is one logged record: its message and its attributes' values as text.
type record struct {
	Msg   string
	Attrs map[string]string
}

// Find returns the records whose message contains substr.
func (l *logs) Find(substr string) []record {
	var out []record
	for line := range strings.Lines(l.All()) {
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber() // a revision reads back as written
		var m map[string]any
		if d.Decode(&m) != nil {
			continue
		}
		msg, _ := m["msg"].(string)
		if !strings.Contains(msg, substr) {
			continue
		}
		r := record{Msg: msg, Attrs: map[string]string{}}
		for k, v := range m {
			r.Attrs[k] = fmt.Sprint(v)
		}
		out = append(out, r)
	}
	return out
}

// Count returns how many records have a message containing substr.
func (l *logs) Count(substr string) int { return len(l.Find(substr)) }

// updates collects the sets a source passes to its update callback.
type updates = nodestest.Updates

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
