package lbd

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/lbdtest"
)

// quiet keeps the background loops out of a test's way: no probe or rebalance round runs
// within an hour, so the proxies' own connection counters show application connections only.
func quiet() []Option {
	return []Option{
		WithCheckHealthInterval(time.Hour),
		WithCheckBalanceInterval(time.Hour),
		WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// openDB opens a *sql.DB through a new Connector over the cluster; both close at test end.
func openDB(t testing.TB, cl *lbdtest.Cluster, params string, opts ...Option) (*sql.DB, *Connector) {
	t.Helper()
	opts = append([]Option{WithLogger(discardLogger())}, opts...)
	c, err := NewConnector(cl.DSN(params), opts...)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c
}

// waitFor polls cond until it holds or the deadline passes.
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

// openCounts returns Stats' open count per proxy, in the cluster's order.
func openCounts(c *Connector, cl *lbdtest.Cluster) []int {
	st := c.Stats()
	out := make([]int, 0, len(cl.Addrs()))
	for _, a := range cl.Addrs() {
		ns, _ := st.Node(a)
		out = append(out, ns.Open)
	}
	return out
}

// proxyCounts returns each proxy's own count of open client connections.
func proxyCounts(cl *lbdtest.Cluster) []int {
	var out []int
	for _, p := range cl.Proxies() {
		out = append(out, p.OpenConns())
	}
	return out
}

func spread(counts []int) int {
	lo, hi := counts[0], counts[0]
	for _, c := range counts {
		lo, hi = min(lo, c), max(hi, c)
	}
	return hi - lo
}

// holdConns checks out n connections at once and returns them; the caller closes them.
func holdConns(t testing.TB, db *sql.DB, n int) []*sql.Conn {
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

// tableName returns a name no other test run uses, since a real backend is shared.
func tableName(prefix string) string {
	return fmt.Sprintf("%s_%d", prefix, rand.Uint64()%1_000_000_000)
}

// logRecorder is a slog handler that keeps every record, for tests that check what lbd logs.
type logRecorder struct {
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct {
	msg   string
	level slog.Level
	attrs map[string]string
	at    time.Time
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{msg: rec.Message, level: rec.Level, attrs: map[string]string{}, at: time.Now()}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, lr)
	r.mu.Unlock()
	return nil
}

// find returns the records with this message whose attributes include every pair in match.
func (r *logRecorder) find(msg string, match ...string) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
next:
	for _, rec := range r.recs {
		if rec.msg != msg {
			continue
		}
		for i := 0; i+1 < len(match); i += 2 {
			if rec.attrs[match[i]] != match[i+1] {
				continue next
			}
		}
		out = append(out, rec)
	}
	return out
}

// nodeState returns addr's state in c's Stats, and false when addr is not there.
func nodeState(c *Connector, addr string) (NodeState, bool) {
	ns, ok := c.Stats().Node(addr)
	return ns.State, ok
}
