// Package nodes is where a Connector's proxy list comes from. A Source pushes whole, versioned
// node sets; the Connector diffs each against what it has (new nodes first, then draining the
// removed ones, never removing the last node that is up). The static list from the DSN, the
// config-server client, etcd and DNS are Sources; users can plug in their own through
// lbd.WithSource.
//
// The package also keeps the registry of DSN networks (Register, as gRPC's resolver.Register):
// a source package registers its network from init, and the root package looks the DSN's
// network up here. Source packages import this package, never the root package.
package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Node is one proxy endpoint as a source reports it.
type Node struct {
	// Addr is "host:port", or "[v6addr]:port".
	Addr string
	// AZ is the node's availability zone (its zone, for lbd's localZone), "" when the source
	// does not know it. A static list spells it "host:port~zone" (see ZoneSep); the
	// config-server and etcd documents give each proxy the AZ whose az.proxy set lists it; a
	// DNS name written "name~zone" gives its zone to every node it resolves to (DNS records
	// carry none).
	AZ string
	// Weight is the node's relative weight, from 0 to MaxWeight: a node of weight 2 holds twice
	// the connections of a node of weight 1 (weighted least-connections). 0, what a source
	// that knows no weight leaves, means DefaultWeight. DNS SRV records carry one; the
	// config-server and etcd documents carry one in their "weight" map; a static DSN list
	// spells it "host:port*weight".
	Weight int
	// Role is what the node is for, as the source knows it; RoleUnknown when it does not. The
	// config-server and etcd documents carry it in their "role" map; a static DSN list spells
	// it "host:port#role" ("host:port*weight#role" with a weight); DNS has none. With a role
	// check configured, the check's answer replaces it.
	Role Role
	// Groups names the groups the node belongs to, joined by GroupSep: "analytics",
	// "analytics+reporting" ("" for none; see CheckGroups, JoinGroups and SplitGroups). The
	// order does not matter. A static list spells them "host:port+group", after the role and
	// before the zone; the config-server and etcd documents carry them in their "group" map;
	// a DNS name written "name+group" gives its groups to every node it resolves to (DNS
	// records carry none). A string rather than a slice, so that a Node stays comparable.
	Groups string
	// Standby nodes are probed and keep their state, but take no new connection. The
	// config-server client marks its AZ's nodes standby while it has fallen back to the
	// default set, so it sees the moment they recover.
	Standby bool
}

// DefaultWeight is the weight of a node whose source reports none (Weight 0).
const DefaultWeight = 1

// MaxWeight is the largest weight a node may have: DNS SRV's range (RFC 2782, 16 bits), which
// the config-server and etcd documents and static lists share.
const MaxWeight = 65535

// CheckWeight returns an error for a weight outside 0..MaxWeight, saying what is allowed.
func CheckWeight(w int) error {
	if w < 0 || w > MaxWeight {
		return fmt.Errorf("nodes: weight %d is out of range: it must be a whole number from 0 to %d (0 means the default, %d)", w, MaxWeight, DefaultWeight)
	}
	return nil
}

// MaxNodes is the most nodes one list may hold: 50 000. A longer list is refused whatever it
// comes from (the DSN, SetNodes, a config-server's answer or document, etcd, DNS) with an error
// wrapping ErrTooManyNodes, and a running Connector keeps its current list. The bound keeps a
// Connector's cost in step with what it was measured at: about 1.5 KiB of heap per node and a
// fixed number of goroutines, so 50 000 nodes hold under 100 MiB. A fleet larger than this is
// best split: each application instance, or each Connector, given a part of it (a
// config-server's AZ sets, one etcd key or DNS name per part).
const MaxNodes = 50_000

// ErrTooManyNodes is wrapped by the error for a node list longer than MaxNodes.
var ErrTooManyNodes = errors.New("node list too long")

// CheckCount returns an error wrapping ErrTooManyNodes when n, the length of a node list, is
// above MaxNodes, saying the bound and what to do; nil otherwise.
func CheckCount(n int) error {
	if n <= MaxNodes {
		return nil
	}
	return fmt.Errorf("nodes: %w", countError(n))
}

// countError is CheckCount's error without the package's prefix.
func countError(n int) error {
	return fmt.Errorf("%w: it has %d nodes, more than the %d a Connector takes (nodes.MaxNodes); "+
		"split the fleet so that each Connector is given at most %d", ErrTooManyNodes, n, MaxNodes, MaxNodes)
}

// Set is a whole node list at one moment.
type Set struct {
	// Nodes are the proxies, without duplicates.
	Nodes []Node
	// Version identifies the set (an md5, an etcd revision, ...). Equal versions from one source
	// mean equal sets; "" means the source has no version of its own.
	Version string
}

// Addrs returns the nodes' addresses in order.
func (s Set) Addrs() []string {
	out := make([]string, len(s.Nodes))
	for i, n := range s.Nodes {
		out[i] = n.Addr
	}
	return out
}

// Validate reports the first problem of a set that must not be applied: an empty set, one of
// more than MaxNodes nodes (CheckCount), a malformed address (see CheckAddr) or a duplicate,
// two entries with one canonical form, a node's groups that CheckGroups refuses, or more than
// MaxGroupSets distinct sets of groups.
func (s Set) Validate() error {
	if len(s.Nodes) == 0 {
		return ErrEmptySet
	}
	if err := CheckCount(len(s.Nodes)); err != nil {
		return err
	}
	if err := checkDistinct(s.Addrs()); err != nil {
		return errors.New("nodes: " + err.Error())
	}
	if err := CheckGroupSets(s.Nodes); err != nil {
		return err
	}
	return nil
}

// Canonical returns a copy of the set with every address in canonical form (see Canonical)
// and every node's groups in name order (JoinGroups). The set must be valid.
func (s Set) Canonical() Set {
	out := Set{Version: s.Version, Nodes: make([]Node, len(s.Nodes))}
	for i, n := range s.Nodes {
		n.Addr, _ = Canonical(n.Addr)
		if strings.IndexByte(n.Groups, GroupSep) >= 0 {
			n.Groups = JoinGroups(SplitGroups(n.Groups)...)
		}
		out.Nodes[i] = n
	}
	return out
}

// ErrEmptySet is what Validate returns for a set with no node; sources keep their current list
// when they would get one.
var ErrEmptySet = errors.New("nodes: empty node list")

// Source supplies node sets to a Connector.
//
// Start is called once. It returns the first set, fetching it if it must, or an error when no
// set can be had. The Connector calls it in the background, with a context that ends at its
// Close, and makes Connect wait for the first set; after an error it reports that error from
// Connect, and a source of a DSN network is built again by its factory and started anew. From then on the source follows changes
// and calls update with each new whole set, from one goroutine at a time, until Close; update
// must not block for long. A source never passes an empty or invalid set to update: such answers
// keep the current list, and the source logs them once per change of condition.
//
// Close stops following changes and waits for the source's goroutines. It is idempotent.
type Source interface {
	Start(ctx context.Context, update func(Set)) (Set, error)
	Close() error
}

// Health is the Connector's view of its nodes, for sources that react to it. It is safe for
// concurrent use and does not block.
type Health interface {
	// NodeHealth reports whether addr is up (taking connections unless standby) and how many
	// consecutive good probes it has had (0 after a failure). ok is false for a node the
	// Connector does not know, or one that is draining.
	NodeHealth(addr string) (up bool, goodProbes int, ok bool)
}

// HealthAware is implemented by sources that follow the health of their nodes. The Connector
// calls UseHealth once, before Start.
type HealthAware interface {
	UseHealth(Health)
}

// Status is a running source's condition, as lbd.Stats shows it: whether its latest refresh
// answered, since when it has not, and why. Times are the source's Clock's.
type Status struct {
	// LastGood is when a refresh last answered with a usable list (passed on, or found
	// unchanged); at first, when Start got its list.
	LastGood time.Time
	// LastChange is when the source last passed a different list on (at first, Start's).
	LastChange time.Time
	// Version is that of the list the source last passed on (Set.Version).
	Version string
	// Failures counts the refreshes that failed in a row since LastGood (0 when the latest
	// answered); FailingSince is when the first of them ended (zero when Failures is 0).
	Failures     int
	FailingSince time.Time
	// LastError is why the latest refresh failed ("" when it answered). While Failures is not
	// 0 the Connector keeps the list of LastChange.
	LastError string
}

// StatusReporter is implemented by sources that report their condition (lbd.Stats.Source).
// Status must be safe for concurrent use, cheap and non-blocking: it is read for Stats, not
// fetched.
type StatusReporter interface {
	Status() Status
}

// Static is a Source with a fixed list: it returns the list from Start and never updates.
type Static []Node

// StaticAddrs builds a Static source from addresses.
func StaticAddrs(addrs ...string) Static {
	s := make(Static, len(addrs))
	for i, a := range addrs {
		s[i] = Node{Addr: a}
	}
	return s
}

// Start implements Source.
func (s Static) Start(context.Context, func(Set)) (Set, error) {
	set := Set{Nodes: append([]Node(nil), s...)}
	if err := set.Validate(); err != nil {
		return Set{}, err
	}
	return set, nil
}

// Close implements Source; there is nothing to stop.
func (Static) Close() error { return nil }
