package lbd

import (
	"github.com/lbd-go/lbd/internal/testkit"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// fleetOpen opens count Connectors over srvs, each holding one connection, with no probe or
// rebalance round in the way (probe connections would count on every server), and returns
// how many connections each server holds.
func fleetOpen(t *testing.T, srvs []*mysqlfake.Server, count int, opts ...Option) []int {
	t.Helper()
	for range count {
		// quiet's loops, without its firstListed: the default source decides, or opts'.
		loops := []Option{
			WithCheckHealthInterval(time.Hour),
			WithCheckBalanceInterval(time.Hour),
			WithJitter(func(max time.Duration) time.Duration { return max - 1 }),
		}
		db, _ := openFakeDB(t, srvs, "", append(loops, opts...)...)
		conns := testkit.HoldConns(t, db, 1)
		t.Cleanup(func() { conns[0].Close() }) // before the DB's own cleanup closes it
	}
	held := make([]int, len(srvs))
	for i, s := range srvs {
		held[i] = s.Open()
	}
	return held
}

// TestFleetSpreadsOverProxies: thirty Connectors (thirty application instances) with one
// connection each over three proxies must not pile onto the first listed; the issue's
// acceptance is 10 ± 4 on every proxy, with the default random source.
func TestFleetSpreadsOverProxies(t *testing.T) {
	srvs := startFakes(t, 3, mysqlfake.Config{})
	held := fleetOpen(t, srvs, 30)
	total := 0
	for i, n := range held {
		total += n
		if n < 6 || n > 14 {
			t.Errorf("proxy %d holds %d connections, want 10 ± 4 (all: %v)", i, n, held)
		}
	}
	if total != 30 {
		t.Fatalf("servers hold %d connections in all, want 30 (%v)", total, held)
	}
	t.Logf("connections per proxy: %v", held)
}

// TestFleetStartsWhereRandSays: the injected source decides where each Connector's turns
// start, and is asked with the number of proxies that take connections.
func TestFleetStartsWhereRandSays(t *testing.T) {
	srvs := startFakes(t, 3, mysqlfake.Config{})
	var asked []int
	draws := []int{2, 2, 0, 1, 2}
	i := 0
	held := fleetOpen(t, srvs, len(draws), WithRand(func(n int) int {
		asked = append(asked, n)
		d := draws[i]
		i++
		return d
	}))
	if want := []int{1, 1, 3}; held[0] != want[0] || held[1] != want[1] || held[2] != want[2] {
		t.Fatalf("connections per proxy %v, want %v", held, want)
	}
	for _, n := range asked {
		if n != 3 {
			t.Fatalf("WithRand's function was asked with %v, want 3 each time", asked)
		}
	}
	if len(asked) != len(draws) {
		t.Fatalf("WithRand's function was asked %d times, want %d (once per Connector)", len(asked), len(draws))
	}
}

// TestWithRandRejectsNil: a nil source is an error, not a silent default.
func TestWithRandRejectsNil(t *testing.T) {
	srvs := startFakes(t, 1, mysqlfake.Config{})
	if _, err := NewConnector(fakeDSN(srvs, ""), WithRand(nil)); err == nil {
		t.Fatal("NewConnector with WithRand(nil) succeeded, want an error")
	}
}
