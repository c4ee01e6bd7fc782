package nodetable

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// baseEjection is the base ejection time of passiveHarness's tables.
const baseEjection = 5 * time.Second

var errNoAnswer = errors.New("probe not answered in time")

// passiveHarness is a harness whose table ejects passively at pct percent, holding 4 nodes
// unless addrs names others.
func passiveHarness(t *testing.T, pct int, addrs ...string) *harness {
	t.Helper()
	if len(addrs) == 0 {
		addrs = []string{"a:1", "b:1", "c:1"}
	}
	h := &harness{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tab, err := New(Config[*payload]{
		RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second, ProbeInterval: probeInterval,
		MaxEjectionPercent: pct, BaseEjectionTime: baseEjection,
		OnTransition: func(x Transition[*payload]) {
			h.mu.Lock()
			h.trans = append(h.trans, x)
			h.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.tab = tab
	if err := tab.Start(nodes.StaticAddrs(addrs...), build); err != nil {
		t.Fatal(err)
	}
	return h
}

// eject suspects addr and fails the confirming probe; it reports whether a probe was asked for.
func (h *harness) eject(addr string) bool {
	n := h.node(addr)
	if !h.tab.Suspect(n, h.now, "statements stalled") {
		return false
	}
	h.tab.Confirmed(n, h.now.Add(200*time.Millisecond), errNoAnswer, 200*time.Millisecond)
	return true
}

func TestPassiveEjectionNeedsTheProbe(t *testing.T) {
	h := passiveHarness(t, 10)
	a := h.node("a:1")
	if !h.tab.Suspect(a, h.now, "statements stalled on the node for 250ms") {
		t.Fatal("Suspect on an up node: no confirming probe asked for")
	}
	if got := h.state("a:1"); got != Up {
		t.Fatalf("a signal alone changed the state to %v; only the probe may confirm", got)
	}
	h.wantTransitions()
	h.tab.Confirmed(a, h.now.Add(200*time.Millisecond), errNoAnswer, 200*time.Millisecond)
	h.mu.Lock()
	tr := h.trans
	h.mu.Unlock()
	if len(tr) != 1 || tr[0].Cause != CausePassive || tr[0].To != Down {
		t.Fatalf("transitions %+v, want one up>down for CausePassive", tr)
	}
	if r := tr[0].Reason; !strings.Contains(r, "statements stalled on the node for 250ms") || !strings.Contains(r, errNoAnswer.Error()) {
		t.Fatalf("reason %q names neither the signal nor the probe's failure", r)
	}
	h.took()
	for _, got := range h.picks(4) {
		if got == "a:1" {
			t.Fatal("an ejected node is still picked")
		}
	}
	v, _ := h.view("a:1")
	if v.Signals != 1 || v.Probes != 1 || v.ProbeFailures != 1 || v.TransitionsBy[CausePassive] != 1 {
		t.Fatalf("counters signals=%d probes=%d failed=%d passive=%d, want 1 each",
			v.Signals, v.Probes, v.ProbeFailures, v.TransitionsBy[CausePassive])
	}
}

func TestPassiveGoodAnswerClearsTheSuspicion(t *testing.T) {
	h := passiveHarness(t, 10)
	a := h.node("a:1")
	if !h.tab.Suspect(a, h.now, "statement timeout") {
		t.Fatal("no confirming probe asked for")
	}
	h.tab.Confirmed(a, h.now.Add(time.Millisecond), nil, time.Millisecond)
	if got := h.state("a:1"); got != Up {
		t.Fatalf("after a good confirming probe: %v, want up", got)
	}
	// A late failure with no suspicion pending (a stale answer) ejects nothing.
	h.tab.Confirmed(a, h.now.Add(2*time.Millisecond), errNoAnswer, 0)
	h.wantTransitions()
	// The suspicion is cleared, so the next signal asks again at once.
	if !h.tab.Suspect(a, h.now.Add(3*time.Millisecond), "statement timeout") {
		t.Fatal("a signal after a good answer asked for no probe")
	}
	if v, _ := h.view("a:1"); v.Probes != 2 || v.GoodProbes != 1 {
		t.Fatalf("probes %d, good %d: the good answer counts as a good probe, the stale failure as a probe", v.Probes, v.GoodProbes)
	}
}

func TestPassiveSignalsCoalesce(t *testing.T) {
	h := passiveHarness(t, 10)
	a := h.node("a:1")
	if !h.tab.Suspect(a, h.now, "connection reset") {
		t.Fatal("first signal: no probe")
	}
	for i := range 5 {
		if h.tab.Suspect(a, h.now.Add(time.Duration(i)*time.Millisecond), "connection reset") {
			t.Fatalf("signal %d while the probe is pending asked for another", i+2)
		}
	}
	// An answer that never came (the node stopped being probed) does not block forever.
	if !h.tab.Suspect(a, h.now.Add(probeInterval), "connection reset") {
		t.Fatal("a probe interval later: no probe")
	}
	if v, _ := h.view("a:1"); v.Signals != 7 {
		t.Fatalf("signals %d, want 7: every one is counted", v.Signals)
	}
}

func TestPassiveIgnoresNodesNotUp(t *testing.T) {
	h := passiveHarness(t, 50, "a:1", "b:1", "c:1", "s:1")
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "a:1"}, {Addr: "b:1"}, {Addr: "c:1"}, {Addr: "s:1", Standby: true}}, build); err != nil {
		t.Fatal(err)
	}
	a := h.node("a:1")
	h.tab.Probed(a, h.tick(), errRefused, 0)
	h.took()
	if h.tab.Suspect(a, h.now, "x") {
		t.Fatal("Suspect on a down node asked for a probe")
	}
	if h.tab.Suspect(h.node("s:1"), h.now, "x") {
		t.Fatal("Suspect on a standby node asked for a probe")
	}
}

func TestPassiveEjectionCap(t *testing.T) {
	for _, tc := range []struct {
		nodes, pct, want int
	}{
		{3, 10, 1},    // at least one, even where 10 % of 3 rounds to 0
		{2, 10, 1},    // one of two: the other stays up
		{1, 100, 0},   // never the last up node
		{3, 100, 2},   // a cap of 100 % still leaves one up
		{20, 10, 2},   // 10 % of 20
		{25, 10, 2},   // rounded down
		{10, 50, 5},   // half
		{3, 0, 0},     // 0 turns it off
		{100, 10, 10}, /**/
	} {
		t.Run(fmt.Sprintf("%d nodes at %d%%", tc.nodes, tc.pct), func(t *testing.T) {
			addrs := make([]string, tc.nodes)
			for i := range addrs {
				addrs[i] = fmt.Sprintf("n%d:1", i)
			}
			h := passiveHarness(t, tc.pct, addrs...)
			got := 0
			for _, a := range addrs {
				if h.eject(a) {
					got++
				}
			}
			down := 0
			for _, a := range addrs {
				if h.state(a) == Down {
					down++
				}
			}
			if got != tc.want || down != tc.want {
				t.Fatalf("%d probes asked for, %d nodes ejected, want %d", got, down, tc.want)
			}
		})
	}
}

// TestPassiveCapHoldsAtConfirmation: two nodes suspected together, the cap allows one; the
// second failing answer ejects nothing and is not held against its node.
func TestPassiveCapHoldsAtConfirmation(t *testing.T) {
	h := passiveHarness(t, 10)
	a, b := h.node("a:1"), h.node("b:1")
	if !h.tab.Suspect(a, h.now, "x") || !h.tab.Suspect(b, h.now, "x") {
		t.Fatal("both suspects should be probed while none is ejected")
	}
	h.tab.Confirmed(a, h.now, errNoAnswer, 0)
	h.tab.Confirmed(b, h.now, errNoAnswer, 0)
	h.wantTransitions("a:1 up>down")
	if v, _ := h.view("b:1"); v.LastErr != nil {
		t.Fatalf("the refused ejection left b's last error %v", v.LastErr)
	}
	// Once a is back, b may be ejected.
	h.tab.Probed(a, h.now.Add(baseEjection), nil, 0)
	h.tab.Probed(a, h.now.Add(baseEjection+probeInterval), nil, 0)
	h.wantTransitions("a:1 down>up")
	h.now = h.now.Add(baseEjection + probeInterval)
	if !h.eject("b:1") {
		t.Fatal("b could not be ejected after a came back")
	}
	h.wantTransitions("b:1 up>down")
}

// TestPassiveProbeAndFatalRulesAreNotCapped: the cap is on passive ejection only.
func TestPassiveProbeAndFatalRulesAreNotCapped(t *testing.T) {
	h := passiveHarness(t, 10)
	h.eject("a:1")
	h.tab.Probed(h.node("b:1"), h.now, errRefused, 0)
	for range 3 {
		h.tab.Fatal(h.node("c:1"), h.now, errRefused)
	}
	h.wantTransitions("a:1 up>down", "b:1 up>down", "c:1 up>down")
}

func TestPassiveEjectionBacksOff(t *testing.T) {
	h := passiveHarness(t, 10)
	a := h.node("a:1")
	// upAfter ejects a at h.now and returns how long after it two good probes, a probe
	// interval apart and starting one second after the ejection, took to bring it back.
	upAfter := func() time.Duration {
		t.Helper()
		if !h.eject("a:1") {
			t.Fatal("not ejected")
		}
		h.took()
		at := h.now
		for d := time.Second; d < time.Hour; d += probeInterval {
			h.tab.Probed(a, at.Add(d), nil, 0)
			if h.state("a:1") == Up {
				h.now = at.Add(d)
				h.took()
				return d
			}
		}
		t.Fatal("never came back")
		return 0
	}
	// 1st: hold 5 s, the second good probe (6 s) ends it. 2nd, at once after: hold 10 s.
	// 3rd: 15 s.
	for i, want := range []time.Duration{6 * time.Second, 11 * time.Second, 16 * time.Second} {
		if got := upAfter(); got != want {
			t.Fatalf("ejection %d: back after %v, want %v", i+1, got, want)
		}
	}
	// Up for 20 base ejection times forgives two of the three: the next hold is 2 × 5 s.
	h.now = h.now.Add(2 * EjectionDecay * baseEjection)
	if got := upAfter(); got != 11*time.Second {
		t.Fatalf("after a long good run: back after %v, want 11s", got)
	}
}

func TestPassiveHoldIsBounded(t *testing.T) {
	h := passiveHarness(t, 10)
	a := h.node("a:1")
	for range 200 {
		h.eject("a:1")
		h.tab.Probed(a, h.now.Add(MaxEjectionTime), nil, 0)
		h.tab.Probed(a, h.now.Add(MaxEjectionTime+probeInterval), nil, 0)
		if h.state("a:1") != Up {
			t.Fatal("a hold outlasted MaxEjectionTime")
		}
		h.now = h.now.Add(MaxEjectionTime + probeInterval)
	}
}

// TestPassiveEjectionEndsWithDraining: a removed ejected node no longer counts against the cap.
func TestPassiveEjectionEndsWithDraining(t *testing.T) {
	h := passiveHarness(t, 10)
	h.eject("a:1")
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "b:1"}, {Addr: "c:1"}}, build); err != nil {
		t.Fatal(err)
	}
	if !h.eject("b:1") {
		t.Fatal("the cap still counts the removed node")
	}
}

func TestNewRejectsEjectionSettingsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config[*payload]
		want string
	}{
		{Config[*payload]{MaxEjectionPercent: -1}, "maxEjectionPercent is -1"},
		{Config[*payload]{MaxEjectionPercent: 101}, "maxEjectionPercent is 101"},
		{Config[*payload]{BaseEjectionTime: -time.Second}, "baseEjectionTime is -1s"},
	} {
		tc.cfg.RecoverCount, tc.cfg.FatalThreshold, tc.cfg.FatalWindow, tc.cfg.ProbeInterval = 1, 1, time.Second, time.Second
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestInconclusiveProbeChangesNothing: a probe judged no verdict is counted as a failed probe,
// and leaves the node's state, a pending suspicion and a down node's run of good probes alone.
func TestInconclusiveProbeChangesNothing(t *testing.T) {
	h := passiveHarness(t, 10)
	a := h.node("a:1")
	if !h.tab.Suspect(a, h.now, "statements stalled") {
		t.Fatal("no confirming probe asked for")
	}
	h.tab.Inconclusive(a, errNoAnswer, time.Second)
	if got := h.state("a:1"); got != Up {
		t.Fatalf("after an inconclusive probe: %v, want up", got)
	}
	h.wantTransitions()
	// The suspicion still awaits its confirming probe, whose failure ejects.
	h.tab.Confirmed(a, h.now.Add(200*time.Millisecond), errNoAnswer, 200*time.Millisecond)
	if got := h.state("a:1"); got != Down {
		t.Fatalf("the confirming probe failed after an inconclusive one: %v, want down", got)
	}
	if v, _ := h.view("a:1"); v.Probes != 2 || v.ProbeFailures != 2 {
		t.Fatalf("probes %d, failed %d, want 2 and 2", v.Probes, v.ProbeFailures)
	}
	// Down: a good probe, an inconclusive one, and a good one the recovery spacing later bring
	// it up once its hold has passed; the inconclusive probe does not break the run.
	h.now = h.now.Add(baseEjection + time.Second)
	h.tab.Probed(a, h.now, nil, time.Millisecond)
	h.tab.Inconclusive(a, errNoAnswer, time.Second)
	h.tab.Probed(a, h.now.Add(probeInterval/2), nil, time.Millisecond)
	if got := h.state("a:1"); got != Up {
		t.Fatalf("two good probes around an inconclusive one: %v, want up", got)
	}
}
