package remote

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// round asks the config-servers in turn, starting with the one that answered last, for one
// set, until one gives a usable answer. It returns that answer and the name of the server
// that gave it, with the failures of the servers tried before; ok is false when none gave
// one (errs then holds every server's failure).
func (s *Source) round(ctx context.Context, v *variant) (ans answer, errs []*ServerError, srv string, ok bool) {
	n := len(s.s.servers)
	for i := range n {
		idx := (s.preferred + i) % n
		if ctx.Err() != nil {
			// Out of time: the servers not tried yet fail the same way.
			errs = append(errs, unreachable(s.s.servers[idx], ctx.Err(), "the deadline"))
			continue
		}
		a, err := s.cl.fetch(ctx, s.s.servers[idx], query{md5: v.md5, policy: v.policy})
		if err == nil {
			s.preferred = idx
			return a, errs, s.s.servers[idx].name, true
		}
		errs = append(errs, err)
	}
	return answer{}, errs, "", false
}

// take stores a usable answer for v and reports whether v's list changed. A new list is
// written to the disk cache and logged.
func (s *Source) take(v *variant, a answer) bool {
	if a.unchanged || (v.have && a.md5 == v.md5 && slices.Equal(a.list, v.list) && maps.Equal(a.weights, v.weights) && maps.Equal(a.roles, v.roles) && maps.Equal(a.zones, v.zones) && maps.Equal(a.groups, v.groups)) {
		return false
	}
	v.list, v.weights, v.roles, v.md5, v.have = a.list, a.weights, a.roles, a.md5, true
	v.zones, v.groups = a.zones, a.groups
	s.notes.emit(slog.LevelInfo, "lbd: config-server sent a new node list", "set", v.name, "nodes", len(a.list), "md5", a.md5)
	if s.cache != nil {
		err := s.cache.save(v.cacheKey, v.md5, v.list, v.weights, v.roles, v.zones, v.groups, s.s.Clock.Now())
		s.notes.cacheWrite(err, s.cache.dir)
	}
	return true
}

// push hands the set the source wants now to the Connector, unless it is the one it has.
func (s *Source) push() {
	set := s.compose()
	if sameSet(set, s.pushed) {
		return
	}
	s.pushed = set
	s.update(set)
}

func sameSet(a, b nodes.Set) bool {
	return slices.Equal(a.Nodes, b.Nodes)
}

// run is the refresh goroutine: a poll every PollInterval and, with a health view, a look at
// the nodes' health every HealthTick.
func (s *Source) run(health nodes.Health) {
	defer close(s.done)
	clk := s.s.Clock
	poll := clk.NewTimer(s.s.PollInterval)
	defer poll.Stop()
	var tick nodes.Timer
	var tickC <-chan time.Time // nil, never ready, without a health view
	if health != nil {
		tick = clk.NewTimer(s.s.HealthTick)
		defer tick.Stop()
		tickC = tick.C()
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-poll.C():
			s.poll()
			poll.Reset(s.s.PollInterval)
		case <-tickC:
			s.checkHealth(health)
			tick.Reset(s.s.HealthTick)
		}
	}
}

// poll runs every PollInterval. Normally it polls the az set. Otherwise it polls the default
// set every time and the az set every AZRefreshInterval, each with its own md5.
func (s *Source) poll() {
	now := s.s.Clock.Now()
	if s.fb.mode == modeNormal {
		if s.refresh(&s.az) {
			s.fb.track(s.az.list, now)
			s.push()
		}
		return
	}
	changed := s.refresh(&s.def)
	if !now.Before(s.fb.nextAZPoll) {
		s.fb.nextAZPoll = now.Add(s.s.AZRefreshInterval)
		if s.refresh(&s.az) {
			s.fb.track(s.az.list, now)
			changed = true
		}
	}
	if changed || s.fb.mode == modeWaiting {
		s.settle()
	}
}

// refresh polls one set and reports whether its list changed. Failures keep the list and are
// logged once per change of condition.
func (s *Source) refresh(v *variant) bool {
	ans, errs, srv, ok := s.round(s.ctx, v)
	if s.ctx.Err() != nil {
		return false // closing
	}
	if !ok {
		s.notes.roundFailed(v.name, errs)
		return false
	}
	s.notes.roundAnswered(v.name, srv, errs)
	return s.take(v, ans)
}
