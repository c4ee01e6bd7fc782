package nodes

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"
)

// staticNetwork is the DSN network of a static node list (lbd.Network): no source may take it.
const staticNetwork = "lb"

// SourceFactory builds the node source of a DSN network such as "lbetcd". Source packages
// register one with Register from their init function, so that importing the package for its
// side effect makes the network usable:
//
//	import _ "github.com/lbd-go/lbd/nodes/etcd"
type SourceFactory struct {
	// Params are the DSN parameters the source reads; lbd removes them before go-sql-driver
	// sees the DSN and hands the ones that were set to New.
	Params []string
	// Secrets are the Params whose values every printing of a lbd.Config or a SourceConfig
	// masks (passwords, API keys).
	Secrets []string
	// New builds the source. It must not block: fetching happens in the source's Start. Its
	// errors are configuration errors, which the Connector returns from NewConnector; they
	// should name the DSN parameter at fault.
	New func(SourceConfig) (Source, error)
	// NoRoles says the source never gives a node a role (DNS records carry none), so a
	// configuration that needs roles (the read/write split, target=primary, target=replica)
	// must get them from a role check; without one, NewConnector refuses it.
	NoRoles bool
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
	registryMu sync.RWMutex
	registry   = map[string]SourceFactory{}
)

// Register makes a DSN network name select a node source, as gRPC's resolver.Register makes a
// target scheme select a resolver. It panics when the name is empty, is "lb" (lbd.Network, the
// static list), or is registered twice, or when New is nil: those are programming errors found
// at init time, like sql.Register's.
func Register(network string, f SourceFactory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if network == "" || network == staticNetwork {
		panic(fmt.Sprintf("nodes: Register: invalid network name %q", network))
	}
	if f.New == nil {
		panic("nodes: Register: nil New for " + network)
	}
	if _, dup := registry[network]; dup {
		panic("nodes: Register: network " + network + " registered twice")
	}
	registry[network] = f
}

// Lookup returns the factory registered for a DSN network; ok is false when none is.
func Lookup(network string) (f SourceFactory, ok bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	f, ok = registry[network]
	return f, ok
}

// RegisteredParams lists the DSN parameters of every registered source, sorted, for the DSN
// parser's typo hints: a parameter of another network would otherwise go to the proxies as a
// SET.
func RegisteredParams() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	var out []string
	for _, f := range registry {
		out = append(out, f.Params...)
	}
	slices.Sort(out)
	return out
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
