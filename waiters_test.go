package lbd

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// TestFailoverWaitersAreBounded: with no primary up (a switchover), at most maxFailoverWaiters
// Connects wait for one; the others fail at once with ErrFailoverWaitersFull, counted in
// Stats. The waiters get their connection once a primary appears.
func TestFailoverWaitersAreBounded(t *testing.T) {
	var readOnly atomic.Value
	readOnly.Store("1") // no primary until the switchover ends
	node := &scripted{answers: map[string]func(string) *mysqlfake.Result{
		"SELECT @@global.read_only": func(string) *mysqlfake.Result {
			return &mysqlfake.Result{Columns: []string{"v"}, Rows: [][]string{{readOnly.Load().(string)}}}
		},
	}}
	srvs := startScripted(t, node)
	db, c := openFakeDB(t, srvs, "target=primary&roleCheck=mysql&failoverTimeoutMillis=10000&maxFailoverWaiters=3",
		fast(50*time.Millisecond, time.Second, time.Hour, &logRecorder{})...)
	db.SetMaxOpenConns(10)
	waitFor(t, 5*time.Second, "the role check", func() bool { ns, _ := c.Stats().Node(srvs[0].Addr()); return ns.Role.String() == "replica" })

	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 3 {
		wg.Go(func() { errs <- db.PingContext(ctx5s(t)) })
	}
	waitFor(t, 5*time.Second, "three waiters", func() bool { return c.Stats().FailoverWaiting == 3 })
	for range 3 {
		start := time.Now()
		err := db.PingContext(ctx5s(t))
		if !errors.Is(err, ErrFailoverWaitersFull) {
			t.Fatalf("a fourth Connect during the switchover: %v, want ErrFailoverWaitersFull", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("the refused Connect took %v, want it at once", took)
		}
	}
	if st := c.Stats(); st.FailoverRefused != 3 || st.FailoverWaiting != 3 {
		t.Fatalf("Stats: %d refused, %d waiting; want 3 and 3", st.FailoverRefused, st.FailoverWaiting)
	}
	readOnly.Store("0") // the switchover ends
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a waiting Connect: %v, want a connection once the primary is up", err)
		}
	}
	if n := c.Stats().FailoverWaiting; n != 0 {
		t.Fatalf("%d still counted as waiting", n)
	}
}
