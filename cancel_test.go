package lbd

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// sleepyAnswer answers "SELECT SLEEP(...)" after 50 ms, as a server running it would, and
// everything else at once.
func sleepyAnswer(q string) *mysqlfake.Result {
	if strings.Contains(q, "SLEEP") {
		time.Sleep(50 * time.Millisecond)
		return &mysqlfake.Result{Columns: []string{"SLEEP(0.05)"}, Rows: [][]string{{"0"}}}
	}
	return mysqlfake.DefaultAnswer(q)
}

// TestCallerCancellationsAreNotTheNodes: a storm of statements that their callers cancel, or
// that run into the callers' own short deadlines, on three healthy proxies. go-sql-driver cuts
// each such connection itself; none of that says anything about the proxy. So no node goes down,
// no error counts as fatal or as a passive signal, and no confirming probe runs.
func TestCallerCancellationsAreNotTheNodes(t *testing.T) {
	// Two 2 s storms of cancellations: beside the tests that wait.
	t.Parallel()
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Duration(1+rand.IntN(40))*time.Millisecond, cancel)
			return ctx, cancel
		}},
		{"deadline 5ms", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 5*time.Millisecond)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvs := startFakes(t, 3, mysqlfake.Config{Answer: sleepyAnswer})
			// Probes every 5 s (the default) and no rebalancing: any probe in the storm is a
			// confirming one.
			db, c := openFakeDB(t, srvs, "", WithCheckHealthInterval(5*time.Second), WithCheckBalanceInterval(time.Hour))
			db.SetMaxOpenConns(32)
			db.SetMaxIdleConns(32)
			if err := db.Ping(); err != nil {
				t.Fatal(err)
			}
			probes := map[string]uint64{}
			for _, ns := range c.Stats().Nodes {
				probes[ns.Addr] = ns.Probes
			}
			const storm = 2 * time.Second
			var ended, failed atomic.Int64
			var wg sync.WaitGroup
			stop := time.Now().Add(storm)
			for range 32 {
				wg.Go(func() {
					for time.Now().Before(stop) {
						ctx, cancel := tc.ctx()
						var v string
						err := db.QueryRowContext(ctx, "SELECT SLEEP(0.05)").Scan(&v)
						cancel()
						if err != nil {
							if ctx.Err() == nil {
								failed.Add(1)
								t.Errorf("a statement failed with its context alive: %v", err)
							}
							ended.Add(1)
						}
					}
				})
			}
			wg.Wait()
			t.Logf("%d statements ended by their callers in %v (%.0f/s)", ended.Load(), storm, float64(ended.Load())/storm.Seconds())
			if ended.Load() < 200 {
				t.Fatalf("only %d statements were cut by their callers: the storm proves nothing", ended.Load())
			}
			for _, ns := range c.Stats().Nodes {
				if ns.State != StateUp || ns.Transitions != 0 {
					t.Errorf("%s: state %v after %d transitions, want up and none", ns.Addr, ns.State, ns.Transitions)
				}
				// Hundreds of statements were cut: were a cut a signal, there would be as many.
				// A signal or two may come from the stall rule itself when this machine starves
				// the fakes' answers for longer than its 100 ms floor while another node answers;
				// those confirm nothing (the state check above) and are not the callers'.
				if ns.FatalErrors != 0 || ns.PassiveSignals > 2 {
					t.Errorf("%s: %d fatal errors and %d passive signals from callers' cancellations, want none (a stall or two at most)", ns.Addr, ns.FatalErrors, ns.PassiveSignals)
				}
				if extra := ns.Probes - probes[ns.Addr]; extra > uint64(storm/time.Second)+1 {
					t.Errorf("%s: %d probes during the storm, want at most about one a second", ns.Addr, extra)
				}
			}
			// The connections the callers cut are gone, counted as closed: Stats and the
			// servers agree once database/sql has dropped them.
			db.SetMaxIdleConns(0)
			waitFor(t, 5*time.Second, "the connections to close", func() bool {
				open := 0
				for _, s := range srvs {
					open += s.Open()
				}
				return c.Stats().Open() == 0 && open <= len(srvs) // each node's probe connection
			})
		})
	}
}
