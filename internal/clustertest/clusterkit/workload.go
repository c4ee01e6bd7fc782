package clusterkit

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/testkit"
)

// StartWorkload runs SELECT 1 on the given number of goroutines until the test ends or Stop,
// with a 1 s deadline per statement.
func StartWorkload(t testing.TB, db *sql.DB, workers int) *testkit.Workload {
	return testkit.StartWorkload(t, db, testkit.WorkloadConfig{Workers: workers, Timeout: time.Second})
}

// Failures stops w and returns its failed statements.
func Failures(w *testkit.Workload) []testkit.Op {
	w.Stop()
	return w.Failures()
}

// SelectLoop runs SELECT 1 on workers goroutines until ctx ends; the first error other than
// the end of ctx is reported to t when the returned wait is called.
func SelectLoop(ctx context.Context, t testing.TB, db *sql.DB, workers int) (wait func()) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				var one int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil && ctx.Err() == nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	return func() {
		t.Helper()
		wg.Wait()
		if first != nil {
			t.Errorf("SELECT 1: %v", first)
		}
	}
}

// RunSelect1 runs total SELECT 1 statements through db.QueryRow on the given number of
// goroutines and fails t on any error or wrong answer.
func RunSelect1(t testing.TB, db *sql.DB, workers, total int) {
	t.Helper()
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				var one int
				err := db.QueryRow("SELECT 1").Scan(&one)
				if err == nil && one != 1 {
					err = fmt.Errorf("SELECT 1 returned %d", one)
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("SELECT 1: %v", err)
	}
}
