package lbd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// passiveCounts returns addr's passive signals, probes and passive transitions.
func passiveCounts(c *Connector, addr string) (signals, probes, ejections uint64) {
	ns, _ := c.Stats().Node(addr)
	return ns.PassiveSignals, ns.Probes, ns.TransitionsBy[CausePassive]
}

// beyondStall waits until c's stall threshold is at its floor (the fleet's latency estimate
// has taken in the statements that just ran: one sample taken with a slow statement in flight
// on a loaded machine can raise it for a while) and returns a statement deadline past twice
// the threshold: a statement cut by it on a silent proxy shows the proxy slow.
func beyondStall(t *testing.T, c *Connector) time.Duration {
	t.Helper()
	// At the floor for three ticks in a row: the stall loop has taken in every statement that
	// landed before (one it samples with the next statement already stalled would count that
	// statement's wait as the fleet's latency).
	atFloor := 0
	waitFor(t, 5*time.Second, "the stall threshold to settle", func() bool {
		if c.health.StallThreshold() != health.StallFloor {
			atFloor = 0
			return false
		}
		atFloor++
		time.Sleep(health.StallTick)
		return atFloor >= 3
	})
	return 2*health.StallFloor + health.StallFloor
}

// TestPassiveSignalTheProbeDoesNotConfirm: a statement that runs into its deadline after its
// proxy was silent for more than the stall threshold, and one whose connection is reset, are
// signals against their proxy; its probe still answers, so it stays up.
func TestPassiveSignalTheProbeDoesNotConfirm(t *testing.T) {
	slow := func(q string) *mysqlfake.Result {
		if strings.Contains(q, "slow") {
			time.Sleep(time.Second)
		}
		return mysqlfake.DefaultAnswer("SELECT 1")
	}
	srvs := startFakes(t, 3, mysqlfake.Config{Answer: slow})
	for _, s := range srvs {
		s.AddFault(mysqlfake.Fault{Name: "command/reset", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Reset,
			Match: mysqlfake.QueryContains("boom")})
	}
	db, c := openFakeDB(t, srvs, "", firstListed())
	db.SetMaxOpenConns(1)
	for i, q := range []string{"SELECT /* slow */ 1", "SELECT /* boom */ 1"} {
		ctx, cancel := context.WithTimeout(context.Background(), beyondStall(t, c))
		_, err := db.ExecContext(ctx, q)
		cancel()
		if err == nil {
			t.Fatalf("%s: no error", q)
		}
		// Each statement may dial afresh, on whichever node's turn it is; find where the signal
		// went, and wait for the probe it brought forward.
		var hit string
		waitFor(t, 5*time.Second, "a signal and its confirming probe", func() bool {
			total := uint64(0)
			hit = ""
			for _, ns := range c.Stats().Nodes {
				total += ns.PassiveSignals
				if ns.PassiveSignals > 0 {
					if ns.Probes == 0 {
						return false
					}
					hit = ns.Addr
				}
			}
			return total >= uint64(i+1)
		})
		t.Logf("%s: %v; signal against %s", q, err, hit)
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != StateUp || ns.TransitionsBy[CausePassive] != 0 {
			t.Errorf("%s: %v, %d passive ejections; its probe answers, it must stay up", ns.Addr, ns.State, ns.TransitionsBy[CausePassive])
		}
	}
}

// TestPassiveSignalTheProbeConfirms: a statement timeout on a proxy silent for more than the
// stall threshold, whose probe stalls too, ejects it at once, long before its next scheduled
// probe.
func TestPassiveSignalTheProbeConfirms(t *testing.T) {
	srvs := startFakes(t, 3, mysqlfake.Config{})
	db, c := openFakeDB(t, srvs, "", firstListed(), WithCheckHealthInterval(time.Hour))
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := srvs[0].Addr()
	if ns, _ := c.Stats().Node(addr); ns.Open != 1 {
		t.Fatalf("the first connection is not on the first listed node: %+v", c.Stats().Nodes)
	}
	srvs[0].AddFault(mysqlfake.Fault{Name: "command/stall", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Stall,
		Match: mysqlfake.QueryContains("SELECT")})
	ctx, cancel := context.WithTimeout(context.Background(), beyondStall(t, c))
	_, err = conn.ExecContext(ctx, "SELECT 1")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("statement on the stalled proxy: %v, want its deadline", err)
	}
	waitFor(t, 5*time.Second, "the passive ejection", func() bool {
		_, _, ejections := passiveCounts(c, addr)
		return ejections == 1
	})
	var down Transition
	for _, x := range c.Stats().Recent {
		if x.Node == addr && x.To == StateDown {
			down = x
		}
	}
	if down.Cause != CausePassive || !strings.Contains(down.Reason, "statement timeout") || !strings.Contains(down.Reason, "confirming probe failed") {
		t.Fatalf("transition %+v: want a passive one naming the timeout and the probe", down)
	}
	// The cap: with one of three out, the others' signals eject nothing.
	for _, s := range srvs[1:] {
		s.AddFault(mysqlfake.Fault{Name: "command/stall", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Stall,
			Match: mysqlfake.QueryContains("SELECT")})
	}
	for range 3 {
		// Past twice the threshold now, without waiting for it to settle: statements stalled
		// here keep the estimate where it is.
		ctx, cancel := context.WithTimeout(context.Background(), 2*c.health.StallThreshold()+health.StallFloor)
		_, _ = db.ExecContext(ctx, "SELECT 1")
		cancel()
	}
	signals := uint64(0)
	for _, s := range srvs[1:] {
		ns, _ := c.Stats().Node(s.Addr())
		signals += ns.PassiveSignals
		if ns.State != StateUp {
			t.Fatalf("%s went %v: of three proxies, the cap allows one passive ejection", ns.Addr, ns.State)
		}
	}
	if signals == 0 {
		t.Fatal("no signal reached the other proxies: the cap was not put to the test")
	}
}
