package dns

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/lifecycle"
)

// ErrClosed is what Start returns after Close.
var ErrClosed = errors.New("dns: source closed")

// Source is a nodes.Source that resolves DNS names on a timer. Build it with New; the zero
// value is not usable. It is safe for concurrent use.
type Source struct {
	cfg     Config
	entries []entry
	life    *lifecycle.Loop // Start once, Close any time; its Ctx is done at Close

	// Owned by the refresh goroutine once Start has returned.
	update  func(nodes.Set)
	version string // of the set the Connector has
	problem string // the current failure condition, "" when the last round answered

	mu     sync.Mutex
	status nodes.Status // what Status returns; written by Start and the refresh goroutine
}

// Status implements nodes.StatusReporter: the source's condition, for lbd.Stats. It is the
// zero Status before Start has returned a list.
func (s *Source) Status() nodes.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// record notes a round's outcome in the status: set when it answered, why it failed otherwise.
func (s *Source) record(set nodes.Set, failed []failure, changed bool) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &s.status
	if len(failed) > 0 {
		if st.Failures == 0 {
			st.FailingSince = now
		}
		st.Failures++
		st.LastError = describe(failed)
		return
	}
	st.LastGood, st.Failures, st.FailingSince, st.LastError = now, 0, time.Time{}, ""
	if changed {
		st.LastChange, st.Version = now, set.Version
	}
}

// New checks cfg and fills in its defaults; it does not resolve anything yet, Start does.
// Errors name the Config field at fault.
func New(cfg Config) (*Source, error) {
	cfg, entries, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, entries: entries, life: lifecycle.New()}, nil
}

// Start implements nodes.Source: it resolves every name and returns the merged nodes, then
// resolves them again every refresh interval until Close. It fails when any name cannot be
// resolved to at least one node (or ctx ends first), after Close, and when called twice.
func (s *Source) Start(ctx context.Context, update func(nodes.Set)) (nodes.Set, error) {
	if err := s.life.Begin("dns", ErrClosed); err != nil {
		return nodes.Set{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.life.Ctx, cancel)
	defer stop()
	set, failed := s.round(ctx)
	if len(failed) > 0 {
		return nodes.Set{}, fmt.Errorf("dns: resolving %v: %s", s.cfg.Names, describe(failed))
	}

	if !s.life.Go(func() { s.update, s.version = update, set.Version; s.record(set, nil, true) }, s.refresh) {
		return nodes.Set{}, ErrClosed
	}
	return set, nil
}

// refresh is the source's one goroutine: a round of lookups every refresh interval, so
// update is never called concurrently.
func (s *Source) refresh() {
	ctx := s.life.Ctx
	t := s.cfg.Clock.NewTimer(s.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		set, failed := s.round(ctx)
		if ctx.Err() != nil {
			return
		}
		s.apply(set, failed)
		t.Reset(s.cfg.RefreshInterval)
	}
}

// apply passes a new answer on, or keeps the list and logs a change of failure condition.
func (s *Source) apply(set nodes.Set, failed []failure) {
	s.record(set, failed, len(failed) == 0 && set.Version != s.version)
	if len(failed) > 0 {
		if c := condition(failed); c != s.problem {
			s.problem = c
			s.cfg.Logger.Warn("lbd: DNS lookup failed; keeping the current node list",
				"names", s.cfg.Names, "reason", describe(failed))
		}
		return
	}
	if s.problem != "" {
		s.problem = ""
		s.cfg.Logger.Info("lbd: DNS answers again", "names", s.cfg.Names, "nodes", len(set.Nodes), "version", set.Version)
	}
	if set.Version == s.version {
		return
	}
	s.version = set.Version
	s.update(set)
}

// Close implements nodes.Source: it stops the lookups and waits for the source's goroutine. It
// is idempotent, may be called before Start, and returns nil.
func (s *Source) Close() error {
	s.life.Close()
	return nil
}
