package routing

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// proxyOf returns the proxy of cl whose recorded texts hold text, and how many proxies do.
func proxyOf(cl *lbdtest.Cluster, text string) (*lbdtest.Proxy, int) {
	var found *lbdtest.Proxy
	n := 0
	for _, p := range cl.Proxies() {
		if slices.Contains(p.Queries(), text) {
			found, n = p, n+1
		}
	}
	return found, n
}

// TestReadRetryNeverRerunsAMultiStatementTextAfterItsFirstResult: with read retries on (the
// default), a multi-statement text whose first result set reached the caller is not run again
// when its proxy is killed before the next one: the caller gets the error, and no other proxy
// ever sees the text. The last statement sleeps, so the kill falls after the first result set
// reached the caller and before the last was sent. A single read killed the same way does run again elsewhere, so the test would see a
// text run again.
func TestReadRetryNeverRerunsAMultiStatementTextAfterItsFirstResult(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 3)
			db, c := clusterkit.OpenDB(t, cl, "multiStatements=true&balance="+mode)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			t.Run("a single read runs again", func(t *testing.T) {
				const text = "SELECT SLEEP(1) AS single_read"
				done := make(chan error, 1)
				go func() {
					var v int
					done <- db.QueryRowContext(ctx, text).Scan(&v)
				}()
				var p *lbdtest.Proxy
				testkit.WaitFor(t, 5*time.Second, "the read on a proxy", func() bool { p, _ = proxyOf(cl, text); return p != nil })
				if err := p.Stop(); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = p.Start() }()
				if err := <-done; err != nil {
					t.Fatalf("the read failed: %v; its proxy was killed under it, and it runs again elsewhere", err)
				}
				if _, n := proxyOf(cl, text); n != 2 {
					t.Fatalf("the read reached %d proxies, want 2", n)
				}
			})
			testkit.WaitFor(t, 10*time.Second, "every proxy up", func() bool {
				for _, p := range cl.Proxies() {
					if s, _ := clusterkit.NodeState(c, p.Addr()); s != lbd.StateUp {
						return false
					}
				}
				return true
			})

			// The server sends a text's result sets when its last statement is done, or when
			// its output buffer (16 KiB) fills: the filler pushes the first result set out to
			// the caller while the last statement sleeps.
			const text = "SELECT 1 AS first; SELECT REPEAT('x', 100000) AS filler; SELECT SLEEP(2) AS last"
			began := time.Now()
			rows, err := db.QueryContext(ctx, text)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			if !rows.Next() {
				t.Fatalf("no first result: %v", rows.Err())
			}
			var first int
			if err := rows.Scan(&first); err != nil || first != 1 {
				t.Fatalf("first result %d, %v", first, err)
			}
			if d := time.Since(began); d > time.Second {
				t.Fatalf("the first result set came after %v: the text had run whole, so no kill can fall within it", d)
			}
			p, n := proxyOf(cl, text)
			if n != 1 {
				t.Fatalf("the text reached %d proxies before any fault, want 1", n)
			}
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			sets := 1
			for rows.NextResultSet() {
				sets++
				for rows.Next() {
				}
			}
			if rows.Err() == nil {
				t.Fatalf("no error after the proxy was killed within the text; %d result sets read", sets)
			}
			if sets == 3 {
				t.Fatal("the last result set arrived from a killed proxy")
			}
			t.Logf("the caller's error: %v", rows.Err())
			rows.Close()
			time.Sleep(500 * time.Millisecond) // a run again would have started by now
			for _, q := range cl.Proxies() {
				if q != p && slices.Contains(q.Queries(), text) {
					t.Errorf("the text ran again on %s after its first result reached the caller", q.Addr())
				}
			}
			if r := c.Stats().Retries.Reads; r != 1 {
				t.Errorf("Stats.Retries.Reads = %d, want 1 (the single read alone)", r)
			}
		})
	}
}
