package lbd

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// SourceFactory builds the node source of a DSN network such as "lbetcd". Source packages
// register one from their init function, so that importing the package for its side effect
// makes the network usable:
//
//	import _ "github.com/lbd-go/lbd/nodes/etcd"
type SourceFactory struct {
	// Params are the DSN parameters the source reads; they are removed before go-sql-driver
	// sees the DSN and handed to New.
	Params []string
	// Secrets are the Params whose values Config.String masks (passwords, API keys).
	Secrets []string
	// New builds the source. It must not block: fetching happens in the source's Start.
	New func(SourceConfig) (nodes.Source, error)
}

// SourceConfig is what a SourceFactory gets from the DSN and the Connector's options.
type SourceConfig struct {
	Network string            // the DSN network, e.g. "lbetcd"
	Addrs   []string          // the entries between the network's parentheses, trimmed
	Params  map[string]string // the DSN parameters listed in SourceFactory.Params that were set
	Logger  *slog.Logger      // the Connector's logger
	Clock   Clock             // the Connector's clock
	// RecoverCheckCount is the Connector's recoverCheckCount: the good probes after which it
	// brings a down node back (a source that switches between node sets may wait for the same).
	RecoverCheckCount int
}

var (
	sourcesMu sync.RWMutex
	sources   = map[string]SourceFactory{}
)

// RegisterSource makes a DSN network name select a node source. It panics when the name is
// empty, is "lb", or is registered twice, or when New is nil: those are programming errors
// found at init time, like sql.Register's.
func RegisterSource(network string, f SourceFactory) {
	sourcesMu.Lock()
	defer sourcesMu.Unlock()
	if network == "" || network == Network {
		panic(fmt.Sprintf("lbd: RegisterSource: invalid network name %q", network))
	}
	if f.New == nil {
		panic("lbd: RegisterSource: nil New for " + network)
	}
	if _, dup := sources[network]; dup {
		panic("lbd: RegisterSource: network " + network + " registered twice")
	}
	sources[network] = f
}

func lookupSource(network string) (SourceFactory, bool) {
	sourcesMu.RLock()
	defer sourcesMu.RUnlock()
	f, ok := sources[network]
	return f, ok
}

// otherNetworksParam finds name, spelt exactly so, among the parameters of registered sources:
// set on a DSN of another network, it would otherwise be sent to the proxies as a SET.
func otherNetworksParam(name string) (string, bool) {
	if slices.Contains(allSourceParams(), name) {
		return name, true
	}
	return "", false
}

// allSourceParams lists every registered source's parameters, for typo hints.
func allSourceParams() []string {
	sourcesMu.RLock()
	defer sourcesMu.RUnlock()
	var out []string
	for _, f := range sources {
		out = append(out, f.Params...)
	}
	sort.Strings(out)
	return out
}

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
	return func(o *options) error {
		if src == nil {
			return fmt.Errorf("lbd: WithSource: nil source")
		}
		o.source = src
		return nil
	}
}

// sourceStartTimeout bounds a source's first fetch; sources apply their own, shorter timeouts.
const sourceStartTimeout = 2 * time.Minute

// startSource builds the Connector's source (WithSource, or the DSN network's registered one),
// takes its first set as the node list, and leaves later sets to applySet. A static DSN list
// has no source.
func (c *Connector) startSource() error {
	src := c.opts.source
	if src == nil && c.cfg.Network != Network && c.cfg.Network != "" {
		f, ok := lookupSource(c.cfg.Network)
		if !ok {
			return unknownNetworkError(c.cfg.Network)
		}
		var err error
		src, err = f.New(SourceConfig{
			Network: c.cfg.Network,
			Addrs:   slices.Clone(c.cfg.SourceAddrs),
			Params:  maps.Clone(c.cfg.SourceParams),
			Logger:  c.logger,
			Clock:   c.opts.clock,

			RecoverCheckCount: c.opts.recoverCount,
		})
		if err != nil {
			return err
		}
	}
	if src == nil {
		if len(c.cfg.Nodes) == 0 {
			return errNoNodes
		}
		return nil
	}
	if ha, ok := src.(nodes.HealthAware); ok {
		ha.UseHealth(healthView{c.bal})
	}
	ctx, cancel := context.WithTimeout(context.Background(), sourceStartTimeout)
	defer cancel()
	set, err := src.Start(ctx, c.applySet)
	if err == nil {
		err = set.Validate()
	}
	if err != nil {
		src.Close()
		return fmt.Errorf("lbd: node source: %w", err)
	}
	c.source = src
	c.cfg.Nodes = set.Addrs()
	c.initialSet = set
	return nil
}

// applySet is the source's update callback: it replaces the node list (SetNodes), waiting until
// the Connector is fully built. An invalid set is logged and changes nothing.
func (c *Connector) applySet(set nodes.Set) {
	select {
	case <-c.ready:
	case <-c.stop:
		return
	}
	if err := set.Validate(); err != nil {
		c.logger.Warn("lbd: node source sent an invalid list; keeping the current one", "error", err.Error())
		return
	}
	c.logger.Debug("lbd: node list from source", "nodes", len(set.Nodes), "version", set.Version)
	c.applyNodes(set) // logs a refused removal itself
}

// Duration reads the source parameter name as a whole number of units (time.Second,
// time.Millisecond), from 1 up to a day. An absent parameter gives 0, for the source to
// replace with its default; anything else is an error naming the parameter.
func (sc SourceConfig) Duration(name string, unit time.Duration) (time.Duration, error) {
	v, set := sc.Params[name]
	if !set {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > int64(24*time.Hour/unit) {
		return 0, fmt.Errorf("lbd: invalid DSN parameter %s=%q: must be a whole number of %s from 1 to %d (a day)",
			name, v, unitName(unit), int64(24*time.Hour/unit))
	}
	return time.Duration(n) * unit, nil
}

func unitName(unit time.Duration) string {
	switch unit {
	case time.Second:
		return "seconds"
	case time.Millisecond:
		return "milliseconds"
	}
	return unit.String() + " units"
}
