// Package testkit holds the helpers lbd's own tests share: polling with a deadline, a slog
// handler that records what was logged, and a collector of node sets. It is not for users.
package testkit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// WaitFor polls cond every 5 ms until it holds, failing t when within passes first.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Logs is a slog.Handler that keeps every record, for tests that check what was logged. The
// zero value is ready to use; it is safe for concurrent use.
type Logs struct {
	mu    sync.Mutex
	lines []Line
}

// Line is one recorded log record.
type Line struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string // attribute values as strings
	At    time.Time         // when it was handled (wall clock)
}

// Enabled implements slog.Handler: every level is recorded.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs implements slog.Handler; attributes given this way are not kept.
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup implements slog.Handler; groups are ignored.
func (l *Logs) WithGroup(string) slog.Handler { return l }

// Handle implements slog.Handler.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	line := Line{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}, At: time.Now()}
	r.Attrs(func(a slog.Attr) bool {
		line.Attrs[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	return nil
}

// Logger returns a logger writing to l.
func (l *Logs) Logger() *slog.Logger { return slog.New(l) }

// Count returns how many lines contain substr in their message.
func (l *Logs) Count(substr string) int { return len(l.Find(substr)) }

// Find returns the lines whose message contains substr.
func (l *Logs) Find(substr string) []Line {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Line
	for _, r := range l.lines {
		if strings.Contains(r.Msg, substr) {
			out = append(out, r)
		}
	}
	return out
}

// Match returns the lines whose message is msg and whose attributes include every key/value
// pair in kv.
func (l *Logs) Match(msg string, kv ...string) []Line {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Line
next:
	for _, r := range l.lines {
		if r.Msg != msg {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if r.Attrs[kv[i]] != kv[i+1] {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// All renders every line, for failure messages and secret checks.
func (l *Logs) All() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.lines {
		fmt.Fprintf(&b, "%s %s %v\n", r.Level, r.Msg, r.Attrs)
	}
	return b.String()
}

// Updates collects the sets a source passes to its update callback.
type Updates struct {
	mu   sync.Mutex
	sets []nodes.Set
}

// Push records s; pass it as a source's update callback.
func (u *Updates) Push(s nodes.Set) {
	u.mu.Lock()
	u.sets = append(u.sets, s)
	u.mu.Unlock()
}

// Len returns how many sets were pushed.
func (u *Updates) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sets)
}

// Last returns the latest set, or an empty one.
func (u *Updates) Last() nodes.Set {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.sets) == 0 {
		return nodes.Set{}
	}
	return u.sets[len(u.sets)-1]
}
