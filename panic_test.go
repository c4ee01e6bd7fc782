package lbd

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// TestPanicModeBoundsItsDials: every proxy accepts TCP and closes at once, so every node is
// down. Many concurrent Connects still fail, but each node sees at most one panic-mode dial in
// flight and one per spacing, not one per caller.
func TestPanicModeBoundsItsDials(t *testing.T) {
	srvs := startFakes(t, 2, mysqlfake.Config{})
	for _, s := range srvs {
		s.AddFault(mysqlfake.Fault{Phase: mysqlfake.PhaseAccept, After: mysqlfake.Close})
	}
	_, c := openFakeDB(t, srvs, "", quiet()...)
	for _, tn := range c.table.Nodes(nil) { // as the prober reports them
		c.table.Probed(tn, c.cfg.clock.Now(), errors.New("handshake failed"), 0)
	}
	if c.table.Ups() != 0 {
		t.Fatal("a node is still up")
	}
	spacing := panicSpacing(c.cfg.CheckHealthInterval)
	before := []int64{srvs[0].Accepted(), srvs[1].Accepted()}
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				_, err := c.Connect(context.Background())
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, err := range errs {
		var ce *ConnectError
		if !errors.As(err, &ce) || !ce.AllDown {
			t.Fatalf("connect %d with every proxy failing: %v, want a ConnectError with AllDown", i, err)
		}
	}
	// Each node: one panic-mode dial per spacing that began within the run, the first at once,
	// and the early probe each failed one asks for.
	limit := 2 * (int64(elapsed/spacing) + 1)
	for i, s := range srvs {
		got := s.Accepted() - before[i]
		if got == 0 {
			t.Errorf("%s saw no panic-mode dial: lbd failed closed", s.Addr())
		}
		if got > limit {
			t.Errorf("%s accepted %d dials during %d Connects over %v, want at most %d (a dial and a probe per %v)",
				s.Addr(), got, len(errs), elapsed, limit, spacing)
		}
	}
	if st := c.Stats(); st.Nodes[0].DialFailures == 0 {
		t.Fatal("no dial failure recorded")
	}
}

func TestPanicSpacing(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{5 * time.Second, 250 * time.Millisecond},
		{100 * time.Millisecond, 10 * time.Millisecond},
		{time.Hour, time.Second},
	} {
		if got := panicSpacing(tc.interval); got != tc.want {
			t.Errorf("panicSpacing(%v) = %v, want %v", tc.interval, got, tc.want)
		}
	}
}
