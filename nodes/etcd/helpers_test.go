package etcd_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/nodes"
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

// logs records log lines for assertions. It is a slog.Handler.
type logs struct {
	mu   sync.Mutex
	recs []logLine
}

type logLine struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logs) WithGroup(string) slog.Handler            { return l }

func (l *logs) Handle(_ context.Context, r slog.Record) error {
	line := logLine{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		line.attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.recs = append(l.recs, line)
	l.mu.Unlock()
	return nil
}

func (l *logs) logger() *slog.Logger { return slog.New(l) }

// count returns how many lines contain substr in their message.
func (l *logs) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if strings.Contains(r.msg, substr) {
			n++
		}
	}
	return n
}

// find returns the lines whose message contains substr.
func (l *logs) find(substr string) []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, r := range l.recs {
		if strings.Contains(r.msg, substr) {
			out = append(out, r)
		}
	}
	return out
}

// all renders every line, for failure messages and secret checks.
func (l *logs) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		fmt.Fprintf(&b, "%s %s %v\n", r.level, r.msg, r.attrs)
	}
	return b.String()
}

func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// updates collects the sets a source passes to its update callback.
type updates struct {
	mu   sync.Mutex
	sets []nodes.Set
}

func (u *updates) push(s nodes.Set) {
	u.mu.Lock()
	u.sets = append(u.sets, s)
	u.mu.Unlock()
}

func (u *updates) len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sets)
}

func (u *updates) last() nodes.Set {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.sets) == 0 {
		return nodes.Set{}
	}
	return u.sets[len(u.sets)-1]
}
