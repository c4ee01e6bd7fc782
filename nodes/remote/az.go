package remote

import (
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// mode is where the AZ fallback stands.
type mode int

const (
	// modeNormal: the Connector has the az set alone.
	modeNormal mode = iota
	// modeWaiting: every node of the az set is unreachable and the default set has not
	// arrived yet; the Connector still has the az set alone.
	modeWaiting
	// modeDegraded: the Connector has the default set's other nodes, taking connections, and
	// the az set's nodes as standby (probed, taking none).
	modeDegraded
)

// fallback is the state of the AZ fallback, owned by the refresh goroutine.
type fallback struct {
	mode mode
	// since is when each node of the az set joined it, and seenUp whether the Connector has
	// shown it up since: a node that has never been up may simply not have had its first
	// probe yet.
	since  map[string]time.Time
	seenUp map[string]bool
	// nextTry: in modeNormal, no new fallback before this (set after a default set that had
	// no other node to offer).
	nextTry time.Time
	// nextAZPoll: outside modeNormal, when the az set is polled next.
	nextAZPoll time.Time
}

// track follows the az set's membership.
func (f *fallback) track(list []string, now time.Time) {
	if f.since == nil {
		f.since, f.seenUp = map[string]time.Time{}, map[string]bool{}
	}
	in := make(map[string]bool, len(list))
	for _, a := range list {
		in[a] = true
		if _, ok := f.since[a]; !ok {
			f.since[a] = now
		}
	}
	for a := range f.since {
		if !in[a] {
			delete(f.since, a)
			delete(f.seenUp, a)
		}
	}
}

func (s *Source) setMode(m mode) {
	s.fb.mode = m
	s.degraded.Store(m == modeDegraded)
}

// compose is the set the Connector should have. Normally (and while waiting for the default
// set) it is the az set. Degraded, it is every node of the default set that is not in the az
// set, taking connections, followed by every node of the az set as standby: a node listed in
// both sets counts as an az node, since the fallback began because all of those were
// unreachable, and it is the az nodes' recovery that ends it.
func (s *Source) compose() nodes.Set {
	if s.fb.mode != modeDegraded {
		return nodes.Set{Nodes: s.az.nodes(false), Version: s.az.md5}
	}
	inAZ := make(map[string]bool, len(s.az.list))
	for _, a := range s.az.list {
		inAZ[a] = true
	}
	out := make([]nodes.Node, 0, len(s.def.list)+len(s.az.list))
	for _, n := range s.def.nodes(false) {
		if !inAZ[n.Addr] {
			out = append(out, n)
		}
	}
	out = append(out, s.az.nodes(true)...)
	return nodes.Set{Nodes: out, Version: "default:" + s.def.md5 + "+az:" + s.az.md5}
}

// nodes is v's list as nodes with the weights, roles, zones and groups the config-server gave
// (absent: the default weight, an unknown role, no zone, no group), marked standby when standby
// is true.
func (v *variant) nodes(standby bool) []nodes.Node {
	out := make([]nodes.Node, len(v.list))
	for i, a := range v.list {
		out[i] = nodes.Node{Addr: a, Weight: v.weights[a], Role: v.roles[a], AZ: v.zones[a], Groups: v.groups[a], Standby: standby}
	}
	return out
}

// addsNodes reports whether the default set has a node the az set has not; when it has none
// (a config-server without AZ policy sends the whole list either way) there is nothing to fall
// back to.
func addsNodes(def, az []string) bool {
	for _, a := range def {
		if !slices.Contains(az, a) {
			return true
		}
	}
	return false
}

// checkHealth runs every HealthTick. Normally it falls back when every node of the az set is
// unreachable; otherwise it returns to the az set once one of its nodes has passed enough
// consecutive probes.
func (s *Source) checkHealth(h nodes.Health) {
	now := s.s.Clock.Now()
	if s.fb.mode == modeNormal {
		if !s.allAZDown(h, now) {
			s.notes.change("fallback", "")
			return
		}
		if now.Before(s.fb.nextTry) {
			return
		}
		s.fallBack(now)
		return
	}
	need := s.s.RecoverCheckCount
	if s.fb.mode == modeWaiting {
		need = min(need, 2) // no default set yet: do not make the recovery wait long
	}
	for _, a := range s.az.list {
		if _, good, ok := h.NodeHealth(a); ok && good >= need {
			s.goBack(a, good)
			return
		}
	}
}

// allAZDown reports whether every node of the az set is unreachable: known to the Connector,
// down, and not passing probes again. A node that has never been up since it joined the set
// counts only once PollInterval has passed, so that a new node is not taken for a dead one
// before its first probe.
func (s *Source) allAZDown(h nodes.Health, now time.Time) bool {
	if len(s.az.list) == 0 {
		return false
	}
	all := true
	for _, a := range s.az.list {
		up, good, ok := h.NodeHealth(a)
		switch {
		case !ok:
			all = false
		case up:
			s.fb.seenUp[a] = true
			all = false
		case good > 0:
			all = false
		case !s.fb.seenUp[a] && now.Sub(s.fb.since[a]) < s.s.PollInterval:
			all = false
		}
	}
	return all
}

// fallBack asks for the default set (policy=default) right away, from the refresh goroutine,
// and moves to it; when no config-server gives it, the disk cache's copy will do, and without
// one the source waits for it, asking again every PollInterval.
func (s *Source) fallBack(now time.Time) {
	s.setMode(modeWaiting)
	s.fb.nextAZPoll = now.Add(s.s.AZRefreshInterval)
	s.refresh(&s.def)
	if !s.def.have {
		s.defaultFromCache()
	}
	if !s.def.have {
		s.notes.once("fallback", "waiting", slog.LevelWarn,
			"lbd: every node of the AZ set is unreachable, and no config-server gave the default set yet; asking again every poll",
			"az_nodes", strings.Join(s.az.list, ","))
		return
	}
	s.settle()
}

// settle applies the default set once it is had: degraded when it offers other nodes, back to
// normal when it does not.
func (s *Source) settle() {
	if !s.def.have {
		return
	}
	if !addsNodes(s.def.list, s.az.list) {
		s.setMode(modeNormal)
		s.fb.nextTry = s.s.Clock.Now().Add(s.s.PollInterval)
		// Logged before the push, so whoever sees the new set can already see why.
		s.notes.once("fallback", "no other node "+s.az.md5+" "+s.def.md5, slog.LevelInfo,
			"lbd: every node of the list is unreachable, and the default set has no other node to fall back to",
			"nodes", strings.Join(s.az.list, ","))
		s.push()
		return
	}
	if s.fb.mode != modeDegraded {
		s.setMode(modeDegraded)
	}
	s.notes.once("fallback", "degraded", slog.LevelWarn,
		"lbd: every node of the AZ set is unreachable; degraded to the default set, the AZ set's nodes stay probed as standby",
		"az_nodes", strings.Join(s.az.list, ","), "default_nodes", len(s.def.list))
	s.push()
}

// goBack returns to the az set alone: the default set's other nodes drain away.
func (s *Source) goBack(node string, good int) {
	was := s.fb.mode
	s.setMode(modeNormal)
	s.fb.nextTry = time.Time{}
	s.notes.change("fallback", "")
	if was == modeDegraded {
		s.notes.emit(slog.LevelInfo, "lbd: a node of the AZ set is reachable again; back to the AZ set",
			"node", node, "good_probes", good)
	} else {
		s.notes.emit(slog.LevelInfo, "lbd: a node of the AZ set is reachable again; no fallback needed",
			"node", node, "good_probes", good)
	}
	s.push() // after the log line, so whoever sees the new set can already see why
}

// defaultFromCache takes the default set from the disk cache, when no config-server gave it.
func (s *Source) defaultFromCache() {
	if s.cache == nil {
		return
	}
	cf, path, err := s.cache.load(s.def.cacheKey)
	switch {
	case errors.Is(err, errNoCache):
		return
	case err != nil:
		s.notes.once("cache read default", "corrupt", slog.LevelWarn,
			"lbd: ignoring a corrupt config-server node list cache file", "file", path, "error", err.Error())
		return
	}
	s.def.list, s.def.weights, s.def.roles, s.def.md5, s.def.have = slices.Clone(cf.Nodes), cf.Weights, cf.roles, cf.MD5, true
	s.def.zones, s.def.groups = cf.Zones, cf.Groups
	s.notes.emit(slog.LevelWarn, "lbd: no config-server gave the default set; using the one cached by an earlier poll",
		"cache_file", path, "cached_at", cf.SavedAt.Format(time.RFC3339), "nodes", len(cf.Nodes))
}
