package remote

import (
	"github.com/lbd-go/lbd/internal/remotefake"
	"slices"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// The four nodes of the AZ tests that use a hand-set health view: az1 holds a and b, the
// default set all four.
const (
	nodeA = "10.1.0.1:2883"
	nodeB = "10.1.0.2:2883"
	nodeC = "10.2.0.1:2883"
	nodeD = "10.2.0.2:2883"
	nodeE = "10.2.0.3:2883"
)

func azFake(t *testing.T) *remotefake.Server {
	cs := remotefake.New(t)
	cs.SetList("s", nodeA, nodeB, nodeC, nodeD)
	cs.SetAZ("s", "az1", nodeA, nodeB)
	return cs
}

func azConfig(cs *remotefake.Server, logs *logRecorder) Config {
	return Config{
		Servers: []string{cs.Addr()}, Schema: "s", AZ: "az1", DisableCache: true,
		PollInterval: 20 * time.Millisecond, AZRefreshInterval: 100 * time.Millisecond,
		HealthTick: 2 * time.Millisecond, Logger: logs.logger(),
	}
}

type wantNode struct {
	addr    string
	standby bool
}

func checkSet(t *testing.T, got nodes.Set, want ...wantNode) {
	t.Helper()
	var g []wantNode
	for _, n := range got.Nodes {
		g = append(g, wantNode{n.Addr, n.Standby})
	}
	if !slices.Equal(g, want) {
		t.Fatalf("set %v, want %v", g, want)
	}
}

func TestFallbackToTheDefaultSetAndBack(t *testing.T) {
	cs := azFake(t)
	logs := &logRecorder{}
	h := newFakeHealth()
	h.set(true, 5, nodeA, nodeB)
	cfg := azConfig(cs, logs)
	cfg.RecoverCheckCount = 3
	src, u, set := startSource(t, cfg, h)
	checkSet(t, set, wantNode{nodeA, false}, wantNode{nodeB, false})
	waitFor(t, 5*time.Second, "health looked at", func() bool { return h.calls.Load() > 20 })
	if u.Len() != 0 || src.Degraded() {
		t.Fatal("fell back while the AZ set was up")
	}

	// One AZ node down is not enough.
	h.set(false, 0, nodeA)
	n := h.calls.Load()
	waitFor(t, 5*time.Second, "health looked at", func() bool { return h.calls.Load() > n+20 })
	if u.Len() != 0 || cs.CountPolicy("default") != 0 {
		t.Fatal("fell back with one AZ node up")
	}

	h.set(false, 0, nodeA, nodeB)
	waitFor(t, 5*time.Second, "the degraded set", func() bool { return u.Len() == 1 })
	checkSet(t, u.Last(), wantNode{nodeC, false}, wantNode{nodeD, false}, wantNode{nodeA, true}, wantNode{nodeB, true})
	if !src.Degraded() {
		t.Error("Degraded() is false")
	}
	waitFor(t, 5*time.Second, "the degrade warning", func() bool { return logs.count("WARN", "degraded to the default set") >= 1 })
	if n := logs.count("WARN", "degraded to the default set"); n != 1 {
		logs.dump(t)
		t.Errorf("%d degrade warnings, want 1", n)
	}

	// While degraded, the default set is polled every poll and the AZ set less often, each
	// with its own md5; a change to either is applied.
	waitFor(t, 5*time.Second, "default polls", func() bool { return cs.CountPolicy("default") >= 8 })
	cs.SetList("s", nodeA, nodeB, nodeC, nodeE)
	waitFor(t, 5*time.Second, "the changed default set", func() bool { return u.Len() == 2 })
	checkSet(t, u.Last(), wantNode{nodeC, false}, wantNode{nodeE, false}, wantNode{nodeA, true}, wantNode{nodeB, true})
	cs.SetAZ("s", "az1", nodeA)
	waitFor(t, 5*time.Second, "the changed AZ set", func() bool { return u.Len() == 3 })
	checkSet(t, u.Last(), wantNode{nodeB, false}, wantNode{nodeC, false}, wantNode{nodeE, false}, wantNode{nodeA, true})

	// Recovery needs RecoverCheckCount good probes.
	h.set(false, 2, nodeA)
	n = h.calls.Load()
	waitFor(t, 5*time.Second, "health looked at", func() bool { return h.calls.Load() > n+20 })
	if u.Len() != 3 || !src.Degraded() {
		t.Fatal("went back before RecoverCheckCount good probes")
	}
	h.set(true, 3, nodeA)
	waitFor(t, 5*time.Second, "the AZ set again", func() bool { return u.Len() == 4 })
	checkSet(t, u.Last(), wantNode{nodeA, false})
	if src.Degraded() {
		t.Error("Degraded() is still true")
	}
	// The line is logged just after the set is pushed.
	waitFor(t, 5*time.Second, "the line about going back", func() bool { return logs.count("INFO", "back to the AZ set", nodeA) >= 1 })
	if n := logs.count("INFO", "back to the AZ set", nodeA); n != 1 {
		logs.dump(t)
		t.Errorf("%d lines about going back, want 1", n)
	}
	src.Close()

	// The requests: every one carries az, ip, the feature level; each variant sends its own md5.
	defMD5 := map[string]bool{nodes.ListMD5([]string{nodeA, nodeB, nodeC, nodeD}): true, nodes.ListMD5([]string{nodeA, nodeB, nodeC, nodeE}): true}
	azMD5 := map[string]bool{nodes.ListMD5([]string{nodeA, nodeB}): true, nodes.ListMD5([]string{nodeA}): true}
	var plain, def int
	for i, r := range cs.Requests() {
		q := r.Query
		if q.Get("az") != "az1" || q.Get("ip") == "" || q.Get("clientFeatureLevel") != "2" {
			t.Errorf("request %d: %v", i, q)
		}
		switch q.Get("policy") {
		case "default":
			def++
			if def > 1 && !defMD5[q.Get("md5")] {
				t.Errorf("default request %d carries md5 %q", i, q.Get("md5"))
			}
		case "":
			plain++
			if i > 0 && !azMD5[q.Get("md5")] {
				t.Errorf("AZ request %d carries md5 %q", i, q.Get("md5"))
			}
		default:
			t.Errorf("request %d: policy %q", i, q.Get("policy"))
		}
	}
	if plain >= def {
		t.Errorf("%d AZ polls and %d default polls; while degraded the AZ set is polled less often", plain, def)
	}
}

// A config-server without AZ policy sends the whole list either way: when all of it is down
// there is nothing to fall back to.
func TestNoFallbackWithoutAnotherNode(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetList("s", nodeA, nodeB)
	logs := &logRecorder{}
	h := newFakeHealth()
	h.set(false, 0, nodeA, nodeB)
	src, u, _ := startSource(t, azConfig(cs, logs), h)
	waitFor(t, 5*time.Second, "a few default requests", func() bool { return cs.CountPolicy("default") >= 3 })
	if u.Len() != 0 || src.Degraded() {
		t.Fatal("fell back to the same list")
	}
	if n := logs.count("no other node"); n != 1 {
		logs.dump(t)
		t.Fatalf("%d lines, want 1", n)
	}
	if n := logs.count("degraded"); n != 0 {
		t.Fatalf("%d degrade lines, want 0", n)
	}
}

// Without the default set the source waits for it, asking every poll; the AZ set's recovery
// then needs at most 2 good probes.
func TestFallbackWaitsForTheDefaultSet(t *testing.T) {
	cs := azFake(t)
	cs.SetFailDefault(true)
	logs := &logRecorder{}
	h := newFakeHealth()
	h.set(true, 5, nodeA, nodeB)
	cfg := azConfig(cs, logs)
	cfg.RecoverCheckCount = 5
	src, u, _ := startSource(t, cfg, h)
	h.set(false, 0, nodeA, nodeB)
	waitFor(t, 5*time.Second, "default requests", func() bool { return cs.CountPolicy("default") >= 4 })
	if u.Len() != 0 || src.Degraded() {
		t.Fatal("degraded without a default set")
	}
	if n := logs.count("WARN", "no config-server gave the default set yet"); n != 1 {
		logs.dump(t)
		t.Fatalf("%d waiting warnings, want 1", n)
	}
	h.set(false, 2, nodeB)
	waitFor(t, 5*time.Second, "the fallback called off", func() bool { return logs.count("no fallback needed") == 1 })
	if u.Len() != 0 {
		t.Fatalf("pushed %v", u.Last())
	}
	// Once the default set can be had, the next outage degrades at once.
	cs.SetFailDefault(false)
	h.set(true, 5, nodeA, nodeB)
	waitFor(t, 5*time.Second, "health looked at", func() bool { return h.calls.Load() > 50 })
	h.set(false, 0, nodeA, nodeB)
	waitFor(t, 5*time.Second, "the degraded set", func() bool { return u.Len() == 1 && src.Degraded() })
}

// The default set cached by an earlier fallback serves when no config-server gives it.
func TestFallbackToTheCachedDefaultSet(t *testing.T) {
	cs := azFake(t)
	dir := t.TempDir()
	logs := &logRecorder{}
	cfg := azConfig(cs, logs)
	cfg.DisableCache, cfg.CacheDir = false, dir
	h := newFakeHealth()
	h.set(true, 5, nodeA, nodeB)
	src, u, _ := startSource(t, cfg, h)
	h.set(false, 0, nodeA, nodeB)
	waitFor(t, 5*time.Second, "the degraded set", func() bool { return u.Len() == 1 })
	src.Close()
	if files := cacheFiles(t, dir); len(files) != 2 {
		t.Fatalf("cache holds %v, want the AZ set and the default set", files)
	}

	cs.SetFailDefault(true)
	h.set(true, 5, nodeA, nodeB)
	_, u, _ = startSource(t, cfg, h)
	h.set(false, 0, nodeA, nodeB)
	waitFor(t, 5*time.Second, "the degraded set from the cache", func() bool { return u.Len() == 1 })
	checkSet(t, u.Last(), wantNode{nodeC, false}, wantNode{nodeD, false}, wantNode{nodeA, true}, wantNode{nodeB, true})
	if logs.count("WARN", "using the one cached") != 1 {
		logs.dump(t)
		t.Fatal("no warning about the cached default set")
	}
}

// A node that has never been up since it joined the AZ set is not taken for a dead one before
// a poll interval has passed: its first probe may still be on its way.
func TestNewAZNodeGrace(t *testing.T) {
	src, err := New(Config{Servers: []string{"cs:1"}, Schema: "s", DisableCache: true, PollInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := newFakeHealth()
	t0 := time.Now()
	src.az.list = []string{nodeA, nodeB}
	src.fb.track(src.az.list, t0)
	if src.allAZDown(h, t0.Add(time.Hour)) {
		t.Fatal("nodes unknown to the Connector count as down")
	}
	h.set(false, 0, nodeA, nodeB)
	if src.allAZDown(h, t0.Add(time.Second)) {
		t.Fatal("never-probed nodes count as down at once")
	}
	if !src.allAZDown(h, t0.Add(time.Minute)) {
		t.Fatal("nodes down for a poll interval do not count as down")
	}
	h.set(true, 1, nodeA)
	if src.allAZDown(h, t0.Add(time.Second)) {
		t.Fatal("an up node counts as down")
	}
	h.set(true, 1, nodeB)
	src.allAZDown(h, t0.Add(time.Second))
	h.set(false, 0, nodeA, nodeB) // seen up before: down at once
	if !src.allAZDown(h, t0.Add(2*time.Second)) {
		t.Fatal("a node seen up, now down, does not count at once")
	}
	h.set(false, 1, nodeB) // passing probes again
	if src.allAZDown(h, t0.Add(time.Hour)) {
		t.Fatal("a recovering node counts as down")
	}
	src.az.list = []string{nodeA, nodeC}
	src.fb.track(src.az.list, t0.Add(time.Hour))
	if _, ok := src.fb.since[nodeB]; ok {
		t.Fatal("a node that left the set is still tracked")
	}
}
