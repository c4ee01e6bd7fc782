// Package testkit holds the helpers lbd's own tests share: polling with a deadline, a slog
// handler that records what was logged, leak checks, workloads. It is not for users, nor for
// the other modules' tests: only the root module and the test-only modules under internal/
// import it (the release check enforces it).
package testkit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
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

// WaitForState is WaitFor for a condition that describes what it saw: check returns whether
// the condition holds and, when it does not, the state it found; on timeout t fails with the
// last state, so that the message says how far things got.
func WaitForState(t testing.TB, within time.Duration, what string, check func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, state := check()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", within, what, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Logs is a slog.Handler that keeps every record, for tests that check what was logged. The
// zero value is ready to use; it is safe for concurrent use. Handlers made by WithAttrs record
// into the same Logs, with their attributes on every record.
type Logs struct {
	mu    sync.Mutex
	lines []Line

	root  *Logs       // where a WithAttrs child records; nil for the Logs itself
	attrs []slog.Attr // a child's attributes
}

// Line is one recorded log record.
type Line struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string // attribute values as strings
	At    time.Time         // when it was handled (wall clock)
	Text  string            // the record rendered as "LEVEL message k=v ..."
}

// Enabled implements slog.Handler: every level is recorded.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs implements slog.Handler: the child records into the same Logs with attrs added.
func (l *Logs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Logs{root: l.store(), attrs: append(append([]slog.Attr(nil), l.attrs...), attrs...)}
}

func (l *Logs) store() *Logs {
	if l.root != nil {
		return l.root
	}
	return l
}

// WithGroup implements slog.Handler; groups are ignored.
func (l *Logs) WithGroup(string) slog.Handler { return l }

// Handle implements slog.Handler.
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	line := Line{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}, At: time.Now()}
	var text strings.Builder
	fmt.Fprintf(&text, "%s %s", r.Level, r.Message)
	add := func(a slog.Attr) bool {
		line.Attrs[a.Key] = a.Value.String()
		fmt.Fprintf(&text, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range l.attrs {
		add(a)
	}
	r.Attrs(add)
	line.Text = text.String()
	st := l.store()
	st.mu.Lock()
	st.lines = append(st.lines, line)
	st.mu.Unlock()
	return nil
}

// Lines returns every record rendered as "LEVEL message k=v ...", in order.
func (l *Logs) Lines() []string {
	st := l.store()
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]string, len(st.lines))
	for i, r := range st.lines {
		out[i] = r.Text
	}
	return out
}

// Containing returns the rendered lines that contain every one of parts.
func (l *Logs) Containing(parts ...string) []string {
	var out []string
next:
	for _, line := range l.Lines() {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// Logger returns a logger writing to l.
func (l *Logs) Logger() *slog.Logger { return slog.New(l) }

// Count returns how many lines contain substr in their message.
func (l *Logs) Count(substr string) int { return len(l.Find(substr)) }

// Find returns the lines whose message contains substr.
func (l *Logs) Find(substr string) []Line {
	st := l.store()
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []Line
	for _, r := range st.lines {
		if strings.Contains(r.Msg, substr) {
			out = append(out, r)
		}
	}
	return out
}

// Match returns the lines whose message is msg and whose attributes include every key/value
// pair in kv.
func (l *Logs) Match(msg string, kv ...string) []Line {
	st := l.store()
	st.mu.Lock()
	defer st.mu.Unlock()
	var out []Line
next:
	for _, r := range st.lines {
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
func (l *Logs) All() string { return strings.Join(l.Lines(), "\n") }

// MySQLNumber returns the MySQL error number inside err, or 0.
func MySQLNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// GoroutinesIn counts the goroutines whose stack runs code of the package with this import
// path, right now; a source's Close must have waited for all of them.
func GoroutinesIn(pkgPath string) int {
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
		if strings.Contains(g, pkgPath+".") {
			count++
		}
	}
	return count
}

// Readier is what Ready waits on: an *lbd.Connector, whose node source starts in the
// background.
type Readier interface {
	Ready(ctx context.Context) error
}

// Ready waits up to 10 s for a Connector's first node list, failing t with Ready's error.
func Ready(t testing.TB, c Readier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("Connector.Ready: %v", err)
	}
}

// ReadyCloser is a Connector as Started sees it.
type ReadyCloser interface {
	Readier
	Close() error
}

// Started is NewConnector followed by a wait for the first node list:
// testkit.Started(lbd.NewConnector(dsn, opts...)) returns NewConnector's error, or else
// Ready's within 10 s, closing the Connector when Ready fails. Tests of a node source's
// start-up use it, since NewConnector itself no longer waits for the source.
func Started[C ReadyCloser](c C, err error) (C, error) {
	if err != nil {
		return c, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ready(ctx); err != nil {
		c.Close()
		return c, err
	}
	return c, nil
}

// HoldConns checks out n connections of db at once and pings each, so that each holds a
// physical connection, and returns them; the caller closes them. It fails t on the first error.
func HoldConns(t testing.TB, db *sql.DB, n int) []*sql.Conn {
	t.Helper()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(context.Background())
		if err != nil {
			t.Fatalf("conn %d: %v", i, err)
		}
		if err := c.PingContext(context.Background()); err != nil {
			t.Fatalf("ping conn %d: %v", i, err)
		}
		conns[i] = c
	}
	return conns
}
