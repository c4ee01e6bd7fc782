package testkit

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// WorkloadConfig shapes a Workload. Zero fields take the defaults noted.
type WorkloadConfig struct {
	Workers int           // goroutines; default 8
	Query   string        // default "SELECT 1"
	Want    string        // the one value the query must return; default "1" for the default query, none otherwise
	Pace    time.Duration // pause between one goroutine's statements; default none
	Timeout time.Duration // per statement; default 5 s
}

// Op is one statement a Workload ran.
type Op struct {
	Start time.Time
	Err   error
}

// Workload runs a query in a loop on several goroutines until Stop, keeping every statement's
// start time and error, so tests can check that no application statement failed while lbd
// worked (or that only the ones started before some moment did).
type Workload struct {
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	ok   atomic.Int64

	mu      sync.Mutex
	ops     []Op
	running map[int]time.Time // start of the statement each worker is running now, by worker
}

// StartWorkload starts a workload on db; it is stopped at the end of the test at the latest.
func StartWorkload(t testing.TB, db *sql.DB, cfg WorkloadConfig) *Workload {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Query == "" {
		cfg.Query = "SELECT 1"
		if cfg.Want == "" {
			cfg.Want = "1"
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	w := &Workload{stop: make(chan struct{}), running: make(map[int]time.Time, cfg.Workers)}
	for worker := range cfg.Workers {
		w.wg.Go(func() {
			for {
				select {
				case <-w.stop:
					return
				default:
				}
				start := time.Now()
				w.mu.Lock()
				w.running[worker] = start
				w.mu.Unlock()
				err := runOnce(db, cfg)
				w.mu.Lock()
				delete(w.running, worker)
				w.ops = append(w.ops, Op{Start: start, Err: err})
				w.mu.Unlock()
				if err == nil {
					w.ok.Add(1)
				}
				if cfg.Pace > 0 {
					select {
					case <-w.stop:
						return
					case <-time.After(cfg.Pace):
					}
				}
			}
		})
	}
	t.Cleanup(func() { w.Stop() })
	return w
}

func runOnce(db *sql.DB, cfg WorkloadConfig) error {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	var got string
	if err := db.QueryRowContext(ctx, cfg.Query).Scan(&got); err != nil {
		return err
	}
	if cfg.Want != "" && got != cfg.Want {
		return fmt.Errorf("%s returned %q, want %q", cfg.Query, got, cfg.Want)
	}
	return nil
}

// Stop stops the goroutines, waits for them and returns every statement run. It is idempotent.
func (w *Workload) Stop() []Op {
	w.once.Do(func() {
		close(w.stop)
		w.wg.Wait()
	})
	return w.Ops()
}

// Ops returns the statements run so far.
func (w *Workload) Ops() []Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Op(nil), w.ops...)
}

// Count returns how many statements have run so far.
func (w *Workload) Count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ops)
}

// StillRunning reports how many statements that started before t are still running: a test
// waits for it to reach 0 to know that every statement caught by some event has ended.
func (w *Workload) StillRunning(t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, start := range w.running {
		if start.Before(t) {
			n++
		}
	}
	return n
}

// Failures returns the failed statements so far.
func (w *Workload) Failures() []Op {
	var out []Op
	for _, o := range w.Ops() {
		if o.Err != nil {
			out = append(out, o)
		}
	}
	return out
}

// Progress waits until n more statements have succeeded, so that a later "no error" check
// covers real traffic.
func (w *Workload) Progress(t testing.TB, within time.Duration, n int64) {
	t.Helper()
	from := w.ok.Load()
	WaitFor(t, within, fmt.Sprintf("%d more successful statements", n), func() bool { return w.ok.Load() >= from+n })
}

// ExpectNoErrors fails the test if any statement has failed so far.
func (w *Workload) ExpectNoErrors(t testing.TB, when string) {
	t.Helper()
	if f := w.Failures(); len(f) > 0 {
		t.Errorf("%s: %d of %d statements have failed so far; first: %v", when, len(f), w.Count(), f[0].Err)
	}
}

// Check stops the workload and fails the test if any statement failed or none ran.
func (w *Workload) Check(t testing.TB) {
	t.Helper()
	ops := w.Stop()
	if len(ops) == 0 {
		t.Fatal("the workload ran no statement")
	}
	if f := w.Failures(); len(f) > 0 {
		t.Fatalf("%d of %d statements failed; first: %v", len(f), len(ops), f[0].Err)
	}
	t.Logf("workload: %d statements, no error", len(ops))
}

// FailedSince returns the errors of the statements in ops started at or after since, and how
// many statements started then.
func FailedSince(ops []Op, since time.Time) (errs []error, total int) {
	for _, o := range ops {
		if o.Start.Before(since) {
			continue
		}
		total++
		if o.Err != nil {
			errs = append(errs, o.Err)
		}
	}
	return errs, total
}
