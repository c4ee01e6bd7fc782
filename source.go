package lbd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/dsnparam"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/nodes"
)

// allSourceParams lists every registered source's parameters, for typo hints.
func allSourceParams() []string { return nodes.RegisteredParams() }

// knownSourcePackages tells users which import makes a network available.
var knownSourcePackages = map[string]string{
	"lbremote": "github.com/lbd-go/lbd/nodes/remote",
	"lbetcd":   "github.com/lbd-go/lbd/nodes/etcd",
	"lbdns":    "github.com/lbd-go/lbd/nodes/dns",
}

func unknownNetworkError(network string) error {
	if strings.ContainsAny(network, ":@") {
		// A DSN without its '@' makes user:password part of the "network": never echo it.
		return fmt.Errorf("lbd: the DSN has no user:password@network(addresses) part; want user:pass@lb(host1:port1,host2:port2)/db")
	}
	if pkg, ok := knownSourcePackages[network]; ok {
		return fmt.Errorf("lbd: DSN network %q needs its source package: import _ %q", network, pkg)
	}
	return fmt.Errorf("lbd: DSN network is %q, want %q as in user:pass@lb(host1:port1,host2:port2)/db, or a registered node source", network, Network)
}

// WithSource makes the Connector take its node list from src instead of the DSN: the set src's
// Start returns is the first list, and later sets replace it (new nodes join after a good
// probe; removed ones drain). The DSN may then name no node: user:pass@lb()/db. Close closes src.
func WithSource(src nodes.Source) Option {
	return func(c *Config) error {
		if src == nil {
			return fmt.Errorf("lbd: WithSource: nil source")
		}
		c.source = src
		return nil
	}
}

// sourceStartTimeout bounds one attempt to start a source; sources apply their own, shorter
// timeouts.
const sourceStartTimeout = 2 * time.Minute

// The wait between two attempts to start a DSN's node source: sourceRetryMin after the first
// failure, doubling up to sourceRetryMax.
const (
	sourceRetryMin = time.Second
	sourceRetryMax = 30 * time.Second
)

// sourceStart is the background start of a Connector's node source. NewConnector only builds
// the source (which does no I/O); one goroutine then calls its Start, which fetches the first
// node set, and Connect waits for that set. A source from the DSN that fails to start is built
// again from its factory and retried with a growing pause; one given with WithSource cannot be
// (Start may be called once), so its failure is final.
type sourceStart struct {
	name    string                       // names the source in errors: lbremote(cs1:8080,cs2:8080)
	rebuild func() (nodes.Source, error) // builds a fresh source for a retry; nil for WithSource's
	done    chan struct{}                // closed when the start goroutine has returned

	mu      sync.Mutex
	src     nodes.Source  // the source being started or, after success, running
	err     error         // why the latest attempt failed; nil before the first failure
	attempt chan struct{} // closed when the attempt in flight ends; nil between attempts
	retryAt time.Time     // when the next attempt begins; zero when there will be none
}

// startSource builds the Connector's source (src from WithSource, or the DSN network's registered one)
// and prepares its background start, which launchSource begins. It does no I/O: errors are the
// source's configuration errors (from its factory) and a go-sql-driver configuration that no
// node could use. A static DSN list has no source.
func (c *Connector) startSource(src nodes.Source) error {
	var rebuild func() (nodes.Source, error)
	name := fmt.Sprintf("%T given with WithSource", src)
	if src == nil && c.cfg.Network != Network && c.cfg.Network != "" {
		f, ok := nodes.Lookup(c.cfg.Network)
		if !ok {
			return unknownNetworkError(c.cfg.Network)
		}
		rebuild = func() (nodes.Source, error) {
			return f.New(nodes.SourceConfig{
				Network: c.cfg.Network,
				Addrs:   slices.Clone(c.cfg.SourceAddrs),
				Params:  maps.Clone(c.cfg.SourceParams),
				Logger:  c.cfg.Logger,
				Clock:   c.cfg.clock,

				RecoverCheckCount: c.cfg.RecoverCheckCount,
			})
		}
		var err error
		if src, err = rebuild(); err != nil {
			return err
		}
		name = c.cfg.Network + "(" + strings.Join(c.cfg.SourceAddrs, ",") + ")"
	}
	if src == nil {
		if len(c.cfg.Nodes) == 0 {
			return errNoNodes
		}
		return nil
	}
	// The nodes come later, but a driver setting that no node could use is known now.
	if _, err := mysql.NewConnector(c.nodeConfig(dsnparam.PlaceholderAddr)); err != nil {
		src.Close()
		return fmt.Errorf("lbd: %w", err)
	}
	c.useHealth(src)
	c.start = &sourceStart{name: name, rebuild: rebuild, src: src, done: make(chan struct{}), attempt: make(chan struct{})}
	return nil
}

// staticNodes is the node list the Connector starts with: the DSN's, unless a source supplies
// the list.
func (c *Connector) staticNodes() []nodes.Node {
	if c.start != nil {
		return nil
	}
	return staticList(c.cfg)
}

func (c *Connector) useHealth(src nodes.Source) {
	if ha, ok := src.(nodes.HealthAware); ok {
		ha.UseHealth(c.table)
	}
}

// launchSource marks a Connector with a static list ready, or starts its source's background
// start; the Connector is ready when the source's first set is in the node table.
func (c *Connector) launchSource() {
	if c.start == nil {
		close(c.ready)
		return
	}
	go c.runSource()
}

// runSource starts the source, retrying a DSN's source until it gives a first set or the
// Connector closes.
func (c *Connector) runSource() {
	s := c.start
	defer close(s.done)
	pause := sourceRetryMin
	for {
		s.mu.Lock()
		src, attempt := s.src, s.attempt
		s.mu.Unlock()
		err := c.startOnce(src)
		if err == nil {
			s.mu.Lock()
			s.err, s.attempt = nil, nil
			s.mu.Unlock()
			close(attempt)
			return
		}
		if c.closed.Load() {
			s.mu.Lock()
			s.src, s.attempt = nil, nil
			s.mu.Unlock()
			close(attempt)
			return
		}
		s.mu.Lock()
		s.src, s.attempt, s.retryAt = nil, nil, time.Time{}
		if s.rebuild == nil {
			s.err = fmt.Errorf("lbd: node source %s did not give a first node list: %w "+
				"(a source given with WithSource is started once: fix the cause, then build a new Connector)", s.name, err)
		} else {
			s.retryAt = c.cfg.clock.Now().Add(pause)
			s.err = fmt.Errorf("lbd: node source %s did not give a first node list: %w "+
				"(check that the source is reachable from this host and that the DSN's source parameters are right; "+
				"lbd tries again in %v, the pause doubling up to %v)",
				s.name, err, pause, sourceRetryMax)
		}
		s.mu.Unlock()
		close(attempt)
		if s.rebuild == nil {
			c.cfg.Logger.Error("lbd: node source did not start; Connect fails until a new Connector is built", "error", err.Error())
			return
		}
		c.cfg.Logger.Warn("lbd: node source did not start; retrying", "source", s.name, "retry_in", pause.String(), "error", err.Error())
		t := c.cfg.clock.NewTimer(pause)
		select {
		case <-t.C():
		case <-c.stop:
			t.Stop()
			return
		}
		pause = min(2*pause, sourceRetryMax)
		next, err := s.rebuild()
		if err != nil { // the same configuration was accepted before; this should not happen
			s.mu.Lock()
			s.err, s.retryAt = fmt.Errorf("lbd: node source %s could not be built again: %w", s.name, err), time.Time{}
			s.mu.Unlock()
			return
		}
		c.useHealth(next)
		s.mu.Lock()
		s.src, s.attempt = next, make(chan struct{})
		s.mu.Unlock()
	}
}

// startOnce runs one Start of src, bounded by sourceStartTimeout and cut short by Close, and
// puts its first set in the node table. A source that fails is closed.
func (c *Connector) startOnce(src nodes.Source) error {
	ctx, cancel := context.WithTimeout(c.stopCtx, sourceStartTimeout)
	defer cancel()
	set, err := src.Start(ctx, c.applySet)
	if err == nil {
		err = set.Validate()
	}
	if err != nil {
		src.Close()
		return err
	}
	if err := c.applyNodes(set); err != nil && !errors.Is(err, ErrNoUpNodeLeft) && !errors.Is(err, ErrClosed) {
		c.cfg.Logger.Warn("lbd: the node source's first list was not fully applied", "error", err.Error())
	}
	close(c.ready)
	return nil
}

// stopSource stops the background start, waits for it and closes the source. Close calls it
// after cancelling stopCtx, which ends a Start in flight.
func (c *Connector) stopSource() {
	if c.start == nil {
		return
	}
	<-c.start.done
	c.start.mu.Lock()
	src := c.start.src
	c.start.mu.Unlock()
	if src != nil {
		src.Close()
	}
}

// SourceStats is the condition of a Connector's node source, in Stats.Source.
type SourceStats struct {
	// Name names the source: its DSN network and entries, "lbdns(_mysql._tcp.proxies.example)",
	// or its type when given with WithSource.
	Name string
	// Ready is true once the source has given its first list (see Connector.Ready).
	Ready bool
	// StartError is why the latest attempt to start the source failed ("" before the first
	// failure, and once it has started).
	StartError string
	// Status is what the source says of itself once started: when it last answered, how many
	// refreshes in a row failed since, and why (nodes.Status). It is the zero Status for a
	// source that does not report one (nodes.StatusReporter) and before Ready.
	Status nodes.Status
}

// sourceStats is Stats.Source: nil without a source.
func (c *Connector) sourceStats() *SourceStats {
	s := c.start
	if s == nil {
		return nil
	}
	s.mu.Lock()
	src, err := s.src, s.err
	s.mu.Unlock()
	out := &SourceStats{Name: s.name}
	select {
	case <-c.ready:
		out.Ready = true
	default:
	}
	if err != nil {
		out.StartError = err.Error()
	}
	if r, ok := src.(nodes.StatusReporter); ok && out.Ready {
		out.Status = r.Status()
	}
	return out
}

// Ready waits until the Connector has its first node list, for code that wants a bad node
// source to fail at start-up rather than at the first statement. A Connector with a static
// list is ready at once. With a node source (a DSN network such as lbremote or lbetcd, or
// WithSource), NewConnector returns before the source has fetched anything, and Connect (so
// the first statement or PingContext) waits the same way. Errors: the caller's context error,
// wrapped with what is still awaited; the source's own error when its latest attempt to start
// failed (lbd tries a DSN's source again, after a pause growing from 1 s to 30 s, so a later
// call may succeed); ErrClosed after Close.
func (c *Connector) Ready(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	default:
	}
	s := c.start
	for {
		s.mu.Lock()
		err, attempt := s.err, s.attempt
		s.mu.Unlock()
		if attempt == nil {
			select {
			case <-c.ready:
				return nil
			default:
			}
			if c.closed.Load() {
				return ErrClosed
			}
			if err != nil {
				return err
			}
		}
		select {
		case <-c.ready:
			return nil
		case <-attempt: // that attempt ended: look again
		case <-c.stop:
			return ErrClosed
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("lbd: %w while node source %s was being started again (the last attempt failed: %v)", ctx.Err(), s.name, err)
			}
			return fmt.Errorf("lbd: %w while waiting for the first node list from node source %s, which has not answered yet "+
				"(each attempt is bounded by the source's own timeout; check that the source is reachable from this host)", ctx.Err(), s.name)
		}
	}
}

// applySet is the source's update callback: it replaces the node list (SetNodes), waiting until
// the Connector has applied the source's first set. An invalid set is logged and changes nothing.
func (c *Connector) applySet(set nodes.Set) {
	select {
	case <-c.ready:
	case <-c.stop:
		return
	}
	if err := set.Validate(); err != nil {
		c.cfg.Logger.Warn("lbd: node source sent an invalid list; keeping the current one", "error", err.Error())
		return
	}
	c.cfg.Logger.Debug("lbd: node list from source", "nodes", len(set.Nodes), "version", set.Version)
	c.applyNodes(set) // logs a refused removal itself
}

// ErrNoUpNodeLeft is returned (wrapped) by SetNodes when applying the new list would remove
// every node that is up and takes connections (one that is up but standby, by the list or its
// role check, or a lagging replica does not count). The additions are applied; the removals
// wait until one of the remaining nodes is up and takes connections, so the application never
// loses its last working proxy to a bad list.
var ErrNoUpNodeLeft = nodetable.ErrNoUpNodeLeft

// SetNodes replaces the node list at run time. Nodes not known before are added in state down
// and take connections after one good probe, warming up over Config.Warmup; nodes no longer listed start draining: they take
// no new connection, their idle connections close at once and their in-use ones at return, and
// they leave Stats when their last connection closes. A list whose removals would leave no up
// node taking connections applies its additions only and returns an error wrapping ErrNoUpNodeLeft; the removals
// happen once one of the listed nodes is up. An empty or malformed list is an error and
// changes nothing, and so is one of more than nodes.MaxNodes (an error wrapping
// nodes.ErrTooManyNodes). An entry may carry a weight, a role, groups and a zone as in the
// DSN, "host:port*2", "host:port#replica", "host:port*2#primary", "host:port#replica+analytics~az1";
// one without has the default weight, an unknown role, no group and no zone. Without a role check (Config.RoleCheck) the roles given here are the nodes' roles: a
// list that swaps them moves new connections to the new primary, and the Connector retires the
// connections of a node its Target no longer accepts as it does for a drain.
func (c *Connector) SetNodes(addrs []string) error {
	if err := nodes.CheckCount(len(addrs)); err != nil {
		return fmt.Errorf("lbd: node list not applied: %w", err)
	}
	list := make([]nodes.Node, len(addrs))
	for i, a := range addrs {
		n, err := nodes.ParseEntry(a)
		if err != nil {
			return fmt.Errorf("lbd: node list not applied: %w", err)
		}
		list[i] = n
	}
	return c.applyNodes(nodes.Set{Nodes: list})
}

// applyNodes is SetNodes for a whole set, whose nodes may be standby: probed, but taking no
// new connection (a config-server's AZ set while the client has fallen back to the default set).
func (c *Connector) applyNodes(set nodes.Set) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := set.Validate(); err != nil {
		return fmt.Errorf("lbd: node list not applied: %w", err)
	}
	c.applyMu.Lock() // one list at a time, so a node is never added and forgotten at once
	defer c.applyMu.Unlock()
	added, err := c.table.SetNodes(c.roles.seedRoles(set.Canonical().Nodes), c.newNode)
	c.retireOutsideGroup()
	c.warnGroups(set.Nodes)
	c.health.TopologyChanged() // a node may have joined a group a Connect waits for
	for _, tn := range added {
		c.cfg.Logger.Info("lbd: node added", "node", tn.Addr(), "state", c.table.State(tn).String())
		c.health.Watch(tn)
	}
	if err != nil {
		c.cfg.Logger.Warn("lbd: node list not fully applied", "error", err.Error())
	}
	return err
}
