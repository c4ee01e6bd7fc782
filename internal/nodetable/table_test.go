package nodetable

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// payload stands in for what lbd hangs off a node: it only remembers its node, as lbd's does.
type payload struct {
	node *Node[*payload]
}

// harness is a table with fake payloads, the transitions it reported, and a fake clock.
type harness struct {
	t     *testing.T
	tab   *Table[*payload]
	mu    sync.Mutex
	trans []Transition[*payload]
	now   time.Time
}

// probeInterval is the probe interval the harness's tables are configured with, and
// panicSpacing their spacing of panic-mode dials.
const (
	probeInterval = 5 * time.Second
	panicSpacing  = 100 * time.Millisecond
)

// tick moves the harness's clock one probe interval on and returns it: the time of the next
// scheduled probe.
func (h *harness) tick() time.Time {
	h.now = h.now.Add(probeInterval)
	return h.now
}

func build(n *Node[*payload]) (*payload, error) { return &payload{node: n}, nil }

func newHarness(t *testing.T, recover, threshold int, window time.Duration) *harness {
	t.Helper()
	return newHarnessWith(t, func(c *Config[*payload]) {
		c.RecoverCount, c.FatalThreshold, c.FatalWindow = recover, threshold, window
	})
}

// newHarnessWith is a harness whose table has the defaults of started, changed by set.
func newHarnessWith(t *testing.T, set func(*Config[*payload])) *harness {
	t.Helper()
	h := &harness{t: t, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := Config[*payload]{
		RecoverCount: 2, FatalThreshold: 3, FatalWindow: 10 * time.Second, ProbeInterval: probeInterval,
		PanicSpacing: panicSpacing,
		OnTransition: func(x Transition[*payload]) {
			// The mutex is released by now: calling the table must not deadlock.
			_ = h.tab.State(x.Node)
			h.mu.Lock()
			h.trans = append(h.trans, x)
			h.mu.Unlock()
		},
	}
	set(&cfg)
	tab, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.tab = tab
	return h
}

// started is a harness whose table holds addrs, trusted at start-up.
func started(t *testing.T, addrs ...string) *harness {
	t.Helper()
	h := newHarness(t, 2, 3, 10*time.Second)
	if err := h.tab.Start(nodes.StaticAddrs(addrs...), build); err != nil {
		t.Fatal(err)
	}
	return h
}

// node returns the table's node for addr, failing the test when there is none.
func (h *harness) node(addr string) *Node[*payload] {
	h.t.Helper()
	for _, n := range h.tab.Nodes(nil) {
		if n.Addr() == addr {
			if n.Payload().node != n {
				h.t.Fatalf("%s: payload does not point back at its node", addr)
			}
			return n
		}
	}
	h.t.Fatalf("%s is not in the table", addr)
	return nil
}

// view returns addr's view, and false when addr is not in the table.
func (h *harness) view(addr string) (View[*payload], bool) {
	for _, v := range h.tab.Snapshot(nil) {
		if v.Addr() == addr {
			return v, true
		}
	}
	return View[*payload]{}, false
}

func (h *harness) state(addr string) State {
	h.t.Helper()
	v, ok := h.view(addr)
	if !ok {
		h.t.Fatalf("%s is not in the table", addr)
	}
	return v.State
}

// took returns the transitions reported since the last call, as "addr from>to" strings
// ("addr forgot" for a node that left the table, "addr role from>to" for a role change).
func (h *harness) took() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, x := range h.trans {
		switch {
		case x.Forgot:
			out = append(out, x.Node.Addr()+" forgot")
		case x.Cause == CauseRole:
			out = append(out, fmt.Sprintf("%s role %v>%v", x.Node.Addr(), x.RoleFrom, x.RoleTo))
		default:
			out = append(out, fmt.Sprintf("%s %v>%v", x.Node.Addr(), x.From, x.To))
		}
	}
	h.trans = nil
	return out
}

func (h *harness) wantTransitions(want ...string) {
	h.t.Helper()
	if got := h.took(); strings.Join(got, "; ") != strings.Join(want, "; ") {
		h.t.Fatalf("transitions %q, want %q", got, want)
	}
}

// picks picks k times by open count and releases nothing; it returns the addresses in order.
func (h *harness) picks(k int) []string {
	var out []string
	for range k {
		n := h.tab.Pick(nil)
		if n == nil {
			out = append(out, "-")
			continue
		}
		out = append(out, n.Addr())
	}
	return out
}

var errRefused = errors.New("connection refused")

func TestNewRejectsSettingsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config[int]
		want string
	}{
		{"recover", Config[int]{RecoverCount: 0, FatalThreshold: 1, FatalWindow: time.Second}, "recoverCheckCount is 0"},
		{"threshold", Config[int]{RecoverCount: 1, FatalThreshold: -1, FatalWindow: time.Second}, "fatalErrorThreshold is -1"},
		{"window", Config[int]{RecoverCount: 1, FatalThreshold: 1}, "fatalErrorWindow is 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New(%+v) = %v, want an error naming %q", tc.cfg, err, tc.want)
			}
		})
	}
}

func TestStartTrustsListedNodes(t *testing.T) {
	h := newHarness(t, 2, 3, time.Second)
	list := []nodes.Node{{Addr: "a:1"}, {Addr: "b:1", Standby: true}, {Addr: "c:1"}}
	if err := h.tab.Start(list, build); err != nil {
		t.Fatal(err)
	}
	for _, v := range h.tab.Snapshot(nil) {
		if v.State != Up || v.LastErr != nil {
			t.Fatalf("%s starts %v (last error %v), want up with no error", v.Addr(), v.State, v.LastErr)
		}
	}
	if v, _ := h.view("b:1"); !v.Standby {
		t.Fatal("b:1 lost its standby flag")
	}
	if got := h.tab.Ups(); got != 2 {
		t.Fatalf("Ups = %d, want 2 (the standby node takes no connection)", got)
	}
	if got := strings.Join(h.picks(4), " "); got != "a:1 c:1 a:1 c:1" {
		t.Fatalf("picks %s, want a:1 and c:1 in turn, never the standby b:1", got)
	}
	h.wantTransitions() // start-up reports nothing

	// One good probe is not a recovery: the node was up all along.
	h.tab.Probed(h.node("b:1"), h.tick(), nil, time.Millisecond)
	h.wantTransitions()
}

func TestStartErrors(t *testing.T) {
	h := newHarness(t, 1, 1, time.Second)
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "a:1"), build); err == nil || !strings.Contains(err.Error(), "a:1 listed twice") {
		t.Fatalf("duplicate address: err = %v", err)
	}
	h = newHarness(t, 1, 1, time.Second)
	boom := errors.New("bad TLS config")
	err := h.tab.Start(nodes.StaticAddrs("a:1"), func(*Node[*payload]) (*payload, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("build error: err = %v, want %v", err, boom)
	}
	if len(h.tab.Nodes(nil)) != 0 {
		t.Fatal("a node whose payload failed to build is in the table")
	}
}

func TestPickLeastOpen(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1")
	a, b := h.node("a:1"), h.node("b:1")
	h.tab.Charge(a)
	h.tab.Charge(a)
	h.tab.Charge(b)
	// a:2 b:1 c:0: c, then c and b (both 1) in turn, ...
	if got := strings.Join(h.picks(4), " "); got != "c:1 b:1 c:1 a:1" {
		t.Fatalf("picks %s, want c:1 b:1 c:1 a:1", got)
	}
	if got := h.tab.Total(); got != 7 {
		t.Fatalf("Total = %d, want 7", got)
	}
	// skip: the nodes a Connect already tried.
	if n := h.tab.Pick([]*Node[*payload]{a, b}); n == nil || n.Addr() != "c:1" {
		t.Fatalf("Pick skipping a and b = %v, want c:1", n)
	}
	if n := h.tab.Pick([]*Node[*payload]{a, b, h.node("c:1")}); n != nil {
		t.Fatalf("Pick skipping every node = %s, want nil", n.Addr())
	}
	for addr, want := range map[string]int{"a:1": 3, "b:1": 2, "c:1": 3} {
		v, _ := h.view(addr)
		if v.Open != want || v.InUse != 0 {
			t.Fatalf("%s: open %d in use %d, want %d and 0", addr, v.Open, v.InUse, want)
		}
	}
	for range 3 {
		h.tab.Release(a)
	}
	if v, _ := h.view("a:1"); v.Open != 0 || h.tab.Total() != 5 {
		t.Fatalf("after releases: a open %d, total %d; want 0 and 5", v.Open, h.tab.Total())
	}
}

// TestTiesStartWhereRandSays: equally loaded nodes take turns from the point Config.Rand
// draws, so Connectors with one connection each do not all start on the first listed node;
// the listed order stays what views report. A draw out of range is folded into it.
func TestTiesStartWhereRandSays(t *testing.T) {
	for _, tc := range []struct {
		draw int
		want string
	}{
		{0, "a:1 b:1 c:1 a:1 b:1 c:1"},
		{1, "b:1 c:1 a:1 b:1 c:1 a:1"},
		{2, "c:1 a:1 b:1 c:1 a:1 b:1"},
		{7, "b:1 c:1 a:1 b:1 c:1 a:1"},
		{-1, "c:1 a:1 b:1 c:1 a:1 b:1"},
	} {
		t.Run(fmt.Sprint(tc.draw), func(t *testing.T) {
			var asked []int
			tab, err := New(Config[*payload]{
				RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Second, ProbeInterval: probeInterval,
				Rand: func(n int) int { asked = append(asked, n); return tc.draw },
			})
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, tab: tab}
			// The standby node is probed but never picked: the turns are among the other three.
			list := []nodes.Node{{Addr: "a:1"}, {Addr: "s:1", Standby: true}, {Addr: "b:1"}, {Addr: "c:1"}}
			if err := tab.Start(list, build); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(h.picks(6), " "); got != tc.want {
				t.Fatalf("picks %s, want %s", got, tc.want)
			}
			if len(asked) != 1 || asked[0] != 3 {
				t.Fatalf("Rand asked with %v, want once with 3", asked)
			}
			var order []string
			for _, v := range tab.Snapshot(nil) {
				order = append(order, v.Addr())
			}
			if got := strings.Join(order, " "); got != "a:1 s:1 b:1 c:1" {
				t.Fatalf("views in order %s, want the listed order", got)
			}
		})
	}
}

// TestTrustedNewNodesStartWhereRandSays: nodes a list brings while none takes connections
// (the first list of a node source) are trusted at once, their turns starting where Rand says.
func TestTrustedNewNodesStartWhereRandSays(t *testing.T) {
	tab, err := New(Config[*payload]{
		RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Second, ProbeInterval: probeInterval,
		Rand: func(n int) int { return n - 1 },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, tab: tab}
	if _, err := tab.SetNodes(nodes.StaticAddrs("a:1", "b:1", "c:1"), build); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.picks(3), " "); got != "c:1 a:1 b:1" {
		t.Fatalf("picks %s, want c:1 a:1 b:1", got)
	}
}

func TestPickNoneUp(t *testing.T) {
	h := newHarness(t, 1, 1, time.Second)
	if n := h.tab.Pick(nil); n != nil {
		t.Fatalf("Pick on an empty table = %s", n.Addr())
	}
	if n := h.tab.PickInUse(nil); n != nil {
		t.Fatalf("PickInUse on an empty table = %s", n.Addr())
	}
	h = started(t, "a:1")
	h.tab.Probed(h.node("a:1"), h.tick(), errRefused, 0)
	if n := h.tab.Pick(nil); n != nil {
		t.Fatalf("Pick with the only node down = %s", n.Addr())
	}
	if h.tab.Ups() != 0 || h.tab.Total() != 0 {
		t.Fatalf("Ups %d Total %d, want 0 and 0", h.tab.Ups(), h.tab.Total())
	}
}

func TestInUseCountIsItsOwn(t *testing.T) {
	h := started(t, "a:1", "b:1")
	a := h.node("a:1")
	// Many open connections on a do not steer statement mode's pick, and the other way round.
	for range 5 {
		h.tab.Charge(a)
	}
	first := h.tab.PickInUse(nil)
	if first != a {
		t.Fatalf("PickInUse = %s, want a:1 (both have 0 in use; a was first)", first.Addr())
	}
	if n := h.tab.PickInUse(nil); n.Addr() != "b:1" {
		t.Fatalf("second PickInUse = %s, want b:1", n.Addr())
	}
	h.tab.Claim(a) // a: 2 in use, b: 1
	if n := h.tab.PickInUse(nil); n.Addr() != "b:1" {
		t.Fatalf("PickInUse after a claim on a = %s, want b:1", n.Addr())
	}
	if n := h.tab.PickInUse([]*Node[*payload]{h.node("b:1")}); n != a {
		t.Fatalf("PickInUse skipping b = %v, want a:1", n)
	}
	v, _ := h.view("a:1")
	if v.InUse != 3 || v.Open != 5 {
		t.Fatalf("a: in use %d open %d, want 3 and 5", v.InUse, v.Open)
	}
	if h.tab.Total() != 5 {
		t.Fatalf("Total = %d, want 5: claims are not open connections", h.tab.Total())
	}
	for range 3 {
		h.tab.Unclaim(a)
	}
	if v, _ := h.view("a:1"); v.InUse != 0 {
		t.Fatalf("a: in use %d after unclaiming, want 0", v.InUse)
	}
}

func TestDialRules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dials   []error // in order; nil is a good dial
		want    State
		changes []string
	}{
		{"one failure", []error{errRefused}, Up, nil},
		{"two in a row", []error{errRefused, errRefused}, Down, []string{"a:1 up>down"}},
		{"broken run", []error{errRefused, nil, errRefused}, Up, nil},
		{"three in a row, one change", []error{errRefused, errRefused, errRefused}, Down, []string{"a:1 up>down"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := started(t, "a:1", "b:1")
			a := h.node("a:1")
			for _, err := range tc.dials {
				h.tab.Dialed(a, err)
			}
			if got := h.state("a:1"); got != tc.want {
				t.Fatalf("state %v, want %v", got, tc.want)
			}
			h.wantTransitions(tc.changes...)
			v, _ := h.view("a:1")
			ok, failed := 0, 0
			for _, err := range tc.dials {
				if err == nil {
					ok++
				} else {
					failed++
				}
			}
			if v.Dials != uint64(ok) || v.DialFailures != uint64(failed) || !errors.Is(v.LastErr, errRefused) {
				t.Fatalf("dials %d failures %d last %v, want %d, %d, %v", v.Dials, v.DialFailures, v.LastErr, ok, failed, errRefused)
			}
		})
	}
}

func TestDialDownReasonAndIndex(t *testing.T) {
	h := started(t, "a:1", "b:1")
	a := h.node("a:1")
	h.tab.Charge(a) // a connection open before the failures
	h.tab.Dialed(a, errRefused)
	h.tab.Dialed(a, errRefused)
	h.mu.Lock()
	reason := h.trans[0].Reason
	h.mu.Unlock()
	if reason != "2 consecutive dial failures, last: connection refused" {
		t.Fatalf("reason %q", reason)
	}
	if got := strings.Join(h.picks(3), " "); got != "b:1 b:1 b:1" {
		t.Fatalf("picks %s, want only b:1 while a:1 is down", got)
	}
	// Counts of a down node still move: its connection closes.
	h.tab.Release(a)
	if v, _ := h.view("a:1"); v.Open != 0 || h.tab.Total() != 3 {
		t.Fatalf("a open %d total %d, want 0 and 3", v.Open, h.tab.Total())
	}
}

func TestDialRefusedIsNotHeldAgainstTheNode(t *testing.T) {
	h := started(t, "a:1")
	a := h.node("a:1")
	for range 5 {
		h.tab.DialRefused(a)
	}
	v, _ := h.view("a:1")
	if v.State != Up || v.DialFailures != 5 || v.LastErr != nil {
		t.Fatalf("state %v failures %d last %v, want up, 5, nil", v.State, v.DialFailures, v.LastErr)
	}
	h.wantTransitions()
}

func TestProbeRules(t *testing.T) {
	const bad = "x"
	for _, tc := range []struct {
		name    string
		recover int
		probes  string // x: failed probe, .: good probe
		want    State
		changes []string
	}{
		{"good probes keep it up", 2, "...", Up, nil},
		{"one failure takes it down", 2, "x", Down, []string{"a:1 up>down"}},
		{"one good probe is not enough", 2, "x.", Down, []string{"a:1 up>down"}},
		{"recover count good probes", 2, "x..", Up, []string{"a:1 up>down", "a:1 down>up"}},
		{"a failure restarts the count", 3, "x..x..", Down, []string{"a:1 up>down"}},
		{"then recovers", 3, "x..x...", Up, []string{"a:1 up>down", "a:1 down>up"}},
		{"failures while down change nothing", 1, "xxx.", Up, []string{"a:1 up>down", "a:1 down>up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.recover, 3, time.Second)
			if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
				t.Fatal(err)
			}
			a := h.node("a:1")
			failures := 0
			for i, p := range tc.probes {
				var err error
				if string(p) == bad {
					err = errRefused
					failures++
				}
				h.tab.Probed(a, h.tick(), err, time.Duration(i+1)*time.Millisecond)
			}
			if got := h.state("a:1"); got != tc.want {
				t.Fatalf("state %v, want %v", got, tc.want)
			}
			h.wantTransitions(tc.changes...)
			v, _ := h.view("a:1")
			if v.Probes != uint64(len(tc.probes)) || v.ProbeFailures != uint64(failures) ||
				v.LastProbe != time.Duration(len(tc.probes))*time.Millisecond {
				t.Fatalf("probes %d failures %d last %v", v.Probes, v.ProbeFailures, v.LastProbe)
			}
			if v.Transitions != uint64(len(tc.changes)) {
				t.Fatalf("transitions counted %d, want %d", v.Transitions, len(tc.changes))
			}
		})
	}
}

// TestRecoveryNeedsSpacedProbes: good probes count toward recovery only once the node is down,
// and only when at least half a probe interval apart, so the two early probes a fatal-error
// markdown asks for (one for the errors, one for the transition) never count as two.
func TestRecoveryNeedsSpacedProbes(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name   string
		down   string          // how the node goes down: "fatal", "dials" or "probe"
		probes []time.Duration // when each good probe ends, from the markdown
		want   State
	}{
		{"two probes a millisecond apart are one", "fatal", []time.Duration{ms / 2, 2 * ms}, Down},
		{"three back to back are still one", "fatal", []time.Duration{0, ms, 29 * ms}, Down},
		{"the second a half interval later counts", "fatal", []time.Duration{ms, ms + probeInterval/2}, Up},
		{"one early, then the scheduled one", "fatal", []time.Duration{ms, 2 * ms, probeInterval}, Up},
		{"just under half an interval does not count", "probe", []time.Duration{0, probeInterval/2 - ms}, Down},
		{"good probes before the dials failed do not count", "dials", []time.Duration{ms}, Down},
		{"after dial failures two spaced probes", "dials", []time.Duration{ms, probeInterval}, Up},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 2, 3, 10*time.Second)
			if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
				t.Fatal(err)
			}
			a := h.node("a:1")
			// Good probes while up, the last one just before the markdown.
			h.tab.Probed(a, h.tick(), nil, 0)
			h.tab.Probed(a, h.now.Add(probeInterval-ms), nil, 0)
			down := h.tick()
			switch tc.down {
			case "fatal":
				for range 3 {
					h.tab.Fatal(a, down, errRefused)
				}
			case "dials":
				h.tab.Dialed(a, errRefused)
				h.tab.Dialed(a, errRefused)
			case "probe":
				h.tab.Probed(a, down, errRefused, 0)
			}
			if got := h.state("a:1"); got != Down {
				t.Fatalf("after the markdown: %v, want down", got)
			}
			for _, d := range tc.probes {
				h.tab.Probed(a, down.Add(d), nil, 0)
			}
			if got := h.state("a:1"); got != tc.want {
				t.Fatalf("after good probes at %v: %v, want %v", tc.probes, got, tc.want)
			}
		})
	}
}

// TestEarlyProbeTakesNodeDownAtOnce: spacing holds back recovery only; a failed probe right
// after a good one still takes an up node down.
func TestEarlyProbeTakesNodeDownAtOnce(t *testing.T) {
	h := started(t, "a:1", "b:1")
	a := h.node("a:1")
	at := h.tick()
	h.tab.Probed(a, at, nil, 0)
	h.tab.Probed(a, at.Add(time.Millisecond), errRefused, 0)
	h.wantTransitions("a:1 up>down")
}

func TestProbeIntervalIsRequired(t *testing.T) {
	_, err := New(Config[*payload]{RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Second})
	if err == nil || !strings.Contains(err.Error(), "checkHealthInterval") {
		t.Fatalf("New without a probe interval: %v, want an error naming checkHealthInterval", err)
	}
}

// Every transition names the signal that decided it, and the node counts its transitions by
// that signal.
func TestTransitionCauses(t *testing.T) {
	h := started(t, "probe:1", "dial:1", "fatal:1", "list:1", "ok:1")
	h.tab.Probed(h.node("probe:1"), h.tick(), errRefused, 0)
	for range DialFailuresToDown {
		h.tab.Dialed(h.node("dial:1"), errRefused)
	}
	for range 3 {
		h.tab.Fatal(h.node("fatal:1"), h.tick(), errRefused)
	}
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("probe:1", "dial:1", "fatal:1", "ok:1"), build); err != nil {
		t.Fatal(err)
	}
	want := map[string]Cause{"probe:1": CauseProbe, "dial:1": CauseDial, "fatal:1": CauseFatal, "list:1": CauseNodeList}
	h.mu.Lock()
	got := append([]Transition[*payload](nil), h.trans...)
	h.mu.Unlock()
	// The removed node has no connection, so it drains away at once: one more report, which is
	// no state change.
	if len(got) != len(want)+1 || !got[len(want)].Forgot || got[len(want)].Cause != CauseNodeList {
		t.Fatalf("transitions %+v, want one per node and the removed node forgotten", got)
	}
	for _, x := range got[:len(want)] {
		if c := want[x.Node.Addr()]; x.Cause != c {
			t.Errorf("%s went %v with cause %v, want %v", x.Node.Addr(), x.To, x.Cause, c)
		}
		v, listed := h.view(x.Node.Addr())
		if listed && (v.TransitionsBy[x.Cause] != 1 || v.Transitions != 1) {
			t.Errorf("%s counts %v by cause (%d in all), want one %v", x.Node.Addr(), v.TransitionsBy, v.Transitions, x.Cause)
		}
	}
	if got[0].Reason != "probe failed: connection refused" {
		t.Errorf("probe transition reason %q, want the probe's error", got[0].Reason)
	}
}

func TestDownNodeComesBackIntoThePick(t *testing.T) {
	h := newHarness(t, 1, 3, time.Second)
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	a := h.node("a:1")
	h.tab.Dialed(a, errRefused)
	h.tab.Dialed(a, errRefused)
	h.tab.Charge(h.node("b:1"))
	h.tab.Probed(a, h.tick(), nil, 0)
	if got := strings.Join(h.picks(1), " "); got != "a:1" {
		t.Fatalf("pick after recovery %s, want a:1 (fewest open)", got)
	}
	// Recovery resets the dial-failure run: one more failure does not take it down again.
	h.tab.Dialed(a, errRefused)
	if h.state("a:1") != Up {
		t.Fatal("one dial failure after recovery took the node down")
	}
}

func TestFatalRules(t *testing.T) {
	const window = 10 * time.Second
	for _, tc := range []struct {
		name    string
		at      []time.Duration // when each fatal error happens, from the start
		want    State
		changes []string
	}{
		{"below threshold", []time.Duration{0, time.Second}, Up, nil},
		{"threshold within window", []time.Duration{0, time.Second, 2 * time.Second}, Down, []string{"a:1 up>down"}},
		{"exactly the window", []time.Duration{0, 5 * time.Second, window}, Down, []string{"a:1 up>down"}},
		{"spread over more than the window", []time.Duration{0, 6 * time.Second, 11 * time.Second}, Up, nil},
		{"the latest three count", []time.Duration{0, 6 * time.Second, 11 * time.Second, 12 * time.Second}, Down, []string{"a:1 up>down"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 2, 3, window)
			if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
				t.Fatal(err)
			}
			a := h.node("a:1")
			for _, d := range tc.at {
				h.tab.Fatal(a, h.now.Add(d), errRefused)
			}
			if got := h.state("a:1"); got != tc.want {
				t.Fatalf("state %v, want %v", got, tc.want)
			}
			h.wantTransitions(tc.changes...)
			if v, _ := h.view("a:1"); v.FatalErrors != uint64(len(tc.at)) {
				t.Fatalf("fatal errors %d, want %d", v.FatalErrors, len(tc.at))
			}
		})
	}
}

func TestFatalBurstCountsOnce(t *testing.T) {
	h := newHarness(t, 1, 2, 10*time.Second)
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	a := h.node("a:1")
	h.tab.Fatal(a, h.now, errRefused)
	h.tab.Fatal(a, h.now.Add(time.Second), errRefused)
	h.mu.Lock()
	reason := h.trans[0].Reason
	h.mu.Unlock()
	if reason != "2 fatal errors within 10s, last: connection refused" {
		t.Fatalf("reason %q", reason)
	}
	h.tab.Probed(a, h.tick(), nil, 0) // back up
	h.wantTransitions("a:1 up>down", "a:1 down>up")
	// The burst that took it down is spent: one more error is the first of a new count.
	h.tab.Fatal(a, h.now.Add(2*time.Second), errRefused)
	if h.state("a:1") != Up {
		t.Fatal("the errors of an earlier burst were counted again")
	}
	// Errors on a down node change nothing.
	h.tab.Probed(a, h.tick(), errRefused, 0)
	h.tab.Fatal(a, h.now.Add(3*time.Second), errRefused)
	h.tab.Fatal(a, h.now.Add(4*time.Second), errRefused)
	h.wantTransitions("a:1 up>down")
}

func TestSetNodesAddsFirstAndWaitsForAProbe(t *testing.T) {
	h := started(t, "a:1")
	added, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0].Addr() != "b:1" {
		t.Fatalf("added %v, want b:1", added)
	}
	v, _ := h.view("b:1")
	if v.State != Down || !errors.Is(v.LastErr, errAwaitingProbe) {
		t.Fatalf("b:1 %v (%v), want down waiting for a probe", v.State, v.LastErr)
	}
	if got := strings.Join(h.picks(2), " "); got != "a:1 a:1" {
		t.Fatalf("picks %s, want a:1 only before b:1's probe", got)
	}
	// A node that has never been up needs one good probe, whatever the recover count.
	h.tab.Probed(h.node("b:1"), h.tick(), nil, 0)
	h.wantTransitions("b:1 down>up")
	if got := strings.Join(h.picks(2), " "); got != "b:1 b:1" {
		t.Fatalf("picks %s, want b:1 (fewest open) after its probe", got)
	}
	// Once it has been up it needs the full count.
	b := h.node("b:1")
	h.tab.Probed(b, h.tick(), errRefused, 0)
	h.tab.Probed(b, h.tick(), nil, 0)
	if h.state("b:1") != Down {
		t.Fatal("a node that was up once came back after one good probe; recover count is 2")
	}
}

func TestSetNodesDrains(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1")
	b := h.node("b:1")
	h.tab.Charge(b) // b holds a connection; c holds none
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1"), build); err != nil {
		t.Fatal(err)
	}
	h.wantTransitions("b:1 up>draining", "c:1 up>draining", "c:1 forgot")
	if _, ok := h.view("c:1"); ok {
		t.Fatal("c:1 drained with no connection but is still in the table")
	}
	if got := h.state("b:1"); got != Draining {
		t.Fatalf("b:1 %v, want draining while it holds a connection", got)
	}
	if got := strings.Join(h.picks(2), " "); got != "a:1 a:1" {
		t.Fatalf("picks %s, want only a:1", got)
	}
	h.tab.Release(b)
	h.wantTransitions("b:1 forgot")
	if _, ok := h.view("b:1"); ok {
		t.Fatal("b:1 is still in the table after its last connection closed")
	}
	// A probe still finishing on a forgotten node changes nothing.
	h.tab.Probed(b, h.tick(), nil, 0)
	h.tab.Fatal(b, h.now, errRefused)
	h.wantTransitions()
	if _, ok := h.view("b:1"); ok {
		t.Fatal("a late probe brought a forgotten node back")
	}
}

func TestSetNodesListedAgainWhileDraining(t *testing.T) {
	h := started(t, "a:1", "b:1")
	b := h.node("b:1")
	h.tab.Charge(b)
	h.tab.Charge(b)
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1"), build); err != nil {
		t.Fatal(err)
	}
	added, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0] != b {
		t.Fatalf("added %v, want the same b:1 node back", added)
	}
	h.wantTransitions("b:1 up>draining", "b:1 draining>down")
	v, _ := h.view("b:1")
	if v.Open != 2 || !errors.Is(v.LastErr, errAwaitingProbe) {
		t.Fatalf("b:1 open %d last %v, want its 2 connections kept, waiting for a probe", v.Open, v.LastErr)
	}
	h.tab.Probed(b, h.tick(), nil, 0) // one probe, as for a new node
	h.wantTransitions("b:1 down>up")
}

func TestSetNodesNeverRemovesTheLastUpNode(t *testing.T) {
	h := started(t, "a:1")
	added, err := h.tab.SetNodes(nodes.StaticAddrs("b:1"), build)
	if !errors.Is(err, ErrNoUpNodeLeft) || !strings.Contains(err.Error(), "kept for now: a:1") {
		t.Fatalf("err = %v, want ErrNoUpNodeLeft naming a:1", err)
	}
	if len(added) != 1 || h.state("b:1") != Down {
		t.Fatalf("the addition was not applied: added %v", added)
	}
	if h.state("a:1") != Up {
		t.Fatal("a:1, the last up node, was removed")
	}
	// A failed probe of b changes nothing; a good one brings b up and applies the removal.
	b := h.node("b:1")
	h.tab.Probed(b, h.tick(), errRefused, 0)
	if h.state("a:1") != Up {
		t.Fatal("a:1 removed while b:1 is still down")
	}
	h.tab.Probed(b, h.tick(), nil, 0)
	h.wantTransitions("b:1 down>up", "a:1 up>draining", "a:1 forgot")
}

func TestSetNodesLaterListReplacesHeldRemoval(t *testing.T) {
	h := started(t, "a:1")
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("b:1"), build); !errors.Is(err, ErrNoUpNodeLeft) {
		t.Fatalf("err = %v", err)
	}
	// The next list keeps a: nothing is held back any more, and b's recovery removes nothing.
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	h.tab.Probed(h.node("b:1"), h.tick(), nil, 0)
	h.wantTransitions("b:1 down>up")
	if h.state("a:1") != Up {
		t.Fatal("a:1 removed by a list that was replaced")
	}
}

func TestSetNodesUpButStandbyDoesNotCount(t *testing.T) {
	h := newHarness(t, 2, 3, time.Second)
	if err := h.tab.Start([]nodes.Node{{Addr: "a:1"}, {Addr: "s:1", Standby: true}}, build); err != nil {
		t.Fatal(err)
	}
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "s:1", Standby: true}}, build); !errors.Is(err, ErrNoUpNodeLeft) {
		t.Fatalf("removing the only active node: err = %v, want ErrNoUpNodeLeft", err)
	}
	// Making s active lets the removal through.
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "s:1"}}, build); err != nil {
		t.Fatal(err)
	}
	h.wantTransitions("a:1 up>draining", "a:1 forgot")
	if got := strings.Join(h.picks(1), " "); got != "s:1" {
		t.Fatalf("picks %s, want s:1", got)
	}
}

func TestSetNodesStandbyFlag(t *testing.T) {
	h := started(t, "a:1", "b:1")
	if _, err := h.tab.SetNodes([]nodes.Node{{Addr: "a:1"}, {Addr: "b:1", Standby: true}}, build); err != nil {
		t.Fatal(err)
	}
	if h.tab.Ups() != 1 || strings.Join(h.picks(2), " ") != "a:1 a:1" {
		t.Fatal("a standby node is still in the pick")
	}
	if v, _ := h.view("b:1"); v.State != Up || !v.Standby {
		t.Fatalf("b:1 %v standby %v, want up and standby", v.State, v.Standby)
	}
	if _, err := h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.picks(2), " "); got != "b:1 b:1" {
		t.Fatalf("picks %s, want b:1 back in the pick (fewest open)", got)
	}
	// A down node leaving standby stays out of the pick until it recovers.
	h.tab.SetNodes([]nodes.Node{{Addr: "a:1"}, {Addr: "b:1", Standby: true}}, build)
	h.tab.Probed(h.node("b:1"), h.tick(), errRefused, 0)
	h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build)
	if h.tab.Ups() != 1 {
		t.Fatalf("Ups = %d, want 1: b:1 is down", h.tab.Ups())
	}
	h.wantTransitions("b:1 up>down")
}

func TestSetNodesTrustsNewNodesWhenNoneIsUp(t *testing.T) {
	h := started(t, "a:1")
	h.tab.Probed(h.node("a:1"), h.tick(), errRefused, 0)
	h.took()
	added, err := h.tab.SetNodes([]nodes.Node{{Addr: "a:1"}, {Addr: "b:1"}, {Addr: "s:1", Standby: true}}, build)
	if err != nil || len(added) != 2 {
		t.Fatalf("added %v err %v", added, err)
	}
	if h.state("b:1") != Up {
		t.Fatal("with no node up, a new node must be trusted at once")
	}
	if h.state("s:1") != Down {
		t.Fatal("a new standby node must wait for its probe")
	}
	if got := strings.Join(h.picks(1), " "); got != "b:1" {
		t.Fatalf("picks %s, want b:1", got)
	}
	h.wantTransitions()
}

func TestSetNodesBuildError(t *testing.T) {
	h := started(t, "a:1")
	boom := errors.New("bad node config")
	calls := 0
	added, err := h.tab.SetNodes(nodes.StaticAddrs("b:1", "c:1", "d:1"), func(n *Node[*payload]) (*payload, error) {
		if calls++; calls == 2 {
			return nil, boom
		}
		return build(n)
	})
	if !errors.Is(err, boom) || len(added) != 1 || added[0].Addr() != "b:1" {
		t.Fatalf("added %v err %v, want b:1 and %v", added, err, boom)
	}
	if _, ok := h.view("c:1"); ok {
		t.Fatal("the node whose build failed is in the table")
	}
	if h.state("a:1") != Up {
		t.Fatal("a list that failed half-way removed a node")
	}
}

func TestCountsSurviveSetChanges(t *testing.T) {
	h := started(t, "a:1", "b:1")
	b := h.node("b:1")
	h.tab.Charge(b)
	h.tab.Claim(b)
	h.tab.SetNodes(nodes.StaticAddrs("a:1"), build)
	a := h.node("a:1")
	h.tab.Charge(a) // a different node's count moves; b's stays
	h.tab.Release(a)
	h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build)
	h.tab.Probed(b, h.tick(), nil, 0)
	v, _ := h.view("b:1")
	if v.Open != 1 || v.InUse != 1 || v.State != Up {
		t.Fatalf("b:1 open %d in use %d %v, want 1, 1, up", v.Open, v.InUse, v.State)
	}
	if got := h.tab.Pick(nil); got.Addr() != "a:1" {
		t.Fatalf("pick %s, want a:1 (b still holds its connection)", got.Addr())
	}
}

func TestNodeHealth(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1")
	h.tab.Probed(h.node("a:1"), h.tick(), nil, 0)
	h.tab.Probed(h.node("b:1"), h.tick(), errRefused, 0)
	h.tab.Probed(h.node("b:1"), h.tick(), nil, 0)
	h.tab.Charge(h.node("c:1"))
	h.tab.SetNodes(nodes.StaticAddrs("a:1", "b:1"), build)
	for _, tc := range []struct {
		addr string
		up   bool
		good int
		ok   bool
	}{
		{"a:1", true, 1, true},
		{"b:1", false, 1, true},
		{"c:1", false, 0, false}, // draining
		{"z:1", false, 0, false}, // unknown
	} {
		up, good, ok := h.tab.NodeHealth(tc.addr)
		if up != tc.up || good != tc.good || ok != tc.ok {
			t.Errorf("NodeHealth(%s) = %v %d %v, want %v %d %v", tc.addr, up, good, ok, tc.up, tc.good, tc.ok)
		}
	}
}

func TestPickAndReleaseAllocateNothing(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1")
	h.tab.Pick(nil) // grow the buckets once
	h.tab.Release(h.node("a:1"))
	if n := testing.AllocsPerRun(1000, func() {
		n := h.tab.Pick(nil)
		h.tab.Release(n)
		m := h.tab.PickInUse(nil)
		h.tab.Unclaim(m)
	}); n != 0 {
		t.Fatalf("pick and release allocate %v times", n)
	}
}

// TestConcurrentUse runs picks, releases, probes and set changes at once; -race checks the
// locking, and the counts must come out even.
func TestConcurrentUse(t *testing.T) {
	h := started(t, "a:1", "b:1", "c:1")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				if n := h.tab.Pick(nil); n != nil {
					h.tab.Release(n)
				}
				if n := h.tab.PickInUse(nil); n != nil {
					h.tab.Unclaim(n)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			for _, n := range h.tab.Nodes(nil) {
				var err error
				if i%3 == 0 {
					err = errRefused
				}
				h.tab.Probed(n, h.tick(), err, 0)
			}
			lists := [][]string{{"a:1", "b:1", "c:1"}, {"a:1", "c:1"}, {"b:1", "c:1"}}
			h.tab.SetNodes(nodes.StaticAddrs(lists[i%3]...), build)
			h.tab.Snapshot(nil)
		}
	}()
	wg.Wait()
	if h.tab.Total() != 0 {
		t.Fatalf("Total = %d after every pick was released", h.tab.Total())
	}
	for _, v := range h.tab.Snapshot(nil) {
		if v.Open != 0 || v.InUse != 0 {
			t.Fatalf("%s: open %d in use %d, want 0 and 0", v.Addr(), v.Open, v.InUse)
		}
	}
}

// TestFlapWindow: probes bring a node up at most once per FlapWindow, so a proxy that passes
// its probes but fails the application's statements goes up, down and up again no faster; good
// probes RecoverSpacing apart bring it back as soon as the window allows.
func TestFlapWindow(t *testing.T) {
	const spacing, window = 250 * time.Millisecond, time.Second
	h := newHarnessWith(t, func(c *Config[*payload]) { c.RecoverSpacing, c.FlapWindow = spacing, window })
	if err := h.tab.Start(nodes.StaticAddrs("a:1", "b:1"), build); err != nil {
		t.Fatal(err)
	}
	a := h.node("a:1")
	t0 := h.now
	fatalBurst := func(at time.Time) {
		for range 3 {
			h.tab.Fatal(a, at, errRefused)
		}
	}
	fatalBurst(t0)
	h.tab.Probed(a, t0.Add(10*time.Millisecond), nil, 0)
	h.tab.Probed(a, t0.Add(10*time.Millisecond+spacing-time.Millisecond), nil, 0)
	if got := h.state("a:1"); got != Down {
		t.Fatalf("two good probes under RecoverSpacing apart: %v, want down", got)
	}
	recovered := t0.Add(10*time.Millisecond + spacing)
	h.tab.Probed(a, recovered, nil, 0)
	if got := h.state("a:1"); got != Up {
		t.Fatalf("two good probes RecoverSpacing apart: %v, want up", got)
	}
	// Down again at once, and good probes spaced as before: still down inside the window.
	fatalBurst(recovered.Add(time.Millisecond))
	for i := 1; i <= 3; i++ {
		h.tab.Probed(a, recovered.Add(time.Duration(i)*spacing), nil, 0)
	}
	if got := h.state("a:1"); got != Down {
		t.Fatalf("up again %v after the last recovery: %v, want down until FlapWindow has passed", 3*spacing, got)
	}
	h.tab.Probed(a, recovered.Add(window), nil, 0)
	if got := h.state("a:1"); got != Up {
		t.Fatalf("FlapWindow after the last recovery: %v, want up", got)
	}
	h.wantTransitions("a:1 up>down", "a:1 down>up", "a:1 up>down", "a:1 down>up")
}
