package dns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// failure is one name's failed lookup in a round.
type failure struct {
	name string
	err  error
}

func (f failure) String() string { return f.name + ": " + f.err.Error() }

// round resolves every entry. It returns the merged set when all of them answered with at
// least one usable record, and otherwise the failures.
func (s *Source) round(ctx context.Context) (nodes.Set, []failure) {
	byAddr := map[string]nodes.Node{}
	var failed []failure
	for _, e := range s.entries {
		found, err := s.lookup(ctx, e)
		switch {
		case err != nil:
			failed = append(failed, failure{e.name, err})
			continue
		case len(found) == 0:
			failed = append(failed, failure{e.name, errors.New("the answer holds no usable record")})
			continue
		}
		for _, n := range found {
			old, dup := byAddr[n.Addr]
			if dup && old.Groups != n.Groups {
				// Two names give the node: it belongs to the groups of both.
				n.Groups = unionGroups(old.Groups, n.Groups)
				old.Groups = n.Groups
			}
			if !dup || n.Weight > old.Weight {
				byAddr[n.Addr] = n
			} else {
				byAddr[n.Addr] = old
			}
		}
	}
	if len(failed) > 0 {
		return nodes.Set{}, failed
	}
	set := nodes.Set{Nodes: make([]nodes.Node, 0, len(byAddr))}
	for _, n := range byAddr {
		set.Nodes = append(set.Nodes, n)
	}
	slices.SortFunc(set.Nodes, func(a, b nodes.Node) int { return strings.Compare(a.Addr, b.Addr) })
	if err := set.Validate(); err != nil {
		return nodes.Set{}, []failure{{strings.Join(s.cfg.Names, ","), err}}
	}
	set.Version = version(set.Nodes)
	return set, nil
}

// lookup resolves one entry within the timeout.
func (s *Source) lookup(ctx context.Context, e entry) ([]nodes.Node, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if e.srv {
		_, records, err := s.cfg.Resolver.LookupSRV(ctx, "", "", e.name)
		if err != nil {
			return nil, s.namingServer(err)
		}
		// The records come from the resolver, which may be a program's own: their count is
		// checked before anything is sized by it, and each target as any node address is.
		if err := nodes.CheckCount(len(records)); err != nil {
			return nil, err
		}
		out := make([]nodes.Node, 0, len(records))
		for i, r := range records {
			if r == nil {
				return nil, fmt.Errorf("the resolver's SRV record %d of %d is nil", i+1, len(records))
			}
			target := strings.TrimSuffix(r.Target, ".")
			if target == "" {
				continue // "." : the service is not offered there
			}
			if r.Port == 0 {
				return nil, fmt.Errorf("SRV record for %s has port 0", strconv.QuoteToASCII(truncate(r.Target)))
			}
			addr, err := nodes.Canonical(net.JoinHostPort(target, strconv.Itoa(int(r.Port))))
			if err != nil {
				return nil, fmt.Errorf("SRV record: %w", err)
			}
			out = append(out, nodes.Node{Addr: addr, Weight: int(r.Weight), AZ: e.zone, Groups: e.groups})
		}
		return out, nil
	}
	ips, err := s.cfg.Resolver.LookupIPAddr(ctx, e.host)
	if err != nil {
		return nil, s.namingServer(err)
	}
	if err := nodes.CheckCount(len(ips)); err != nil {
		return nil, err
	}
	out := make([]nodes.Node, 0, len(ips))
	for _, ip := range ips {
		a, ok := netip.AddrFromSlice(ip.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		if a.Is6() && ip.Zone != "" {
			a = a.WithZone(ip.Zone)
		}
		addr, err := nodes.Canonical(netip.AddrPortFrom(a, e.port).String())
		if err != nil { // an IPv6 zone that is no interface name
			return nil, err
		}
		out = append(out, nodes.Node{Addr: addr, AZ: e.zone, Groups: e.groups})
	}
	return out, nil
}

// truncate shortens a string from an answer for an error message.
func truncate(s string) string {
	const n = 80
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// namingServer makes a lookup error name the server that was asked: with Config.Server, Go's
// resolver still reports the system's server, whose address it did not dial.
func (s *Source) namingServer(err error) error {
	var de *net.DNSError
	if s.cfg.Server == "" || !errors.As(err, &de) {
		return err
	}
	fixed := *de
	fixed.Server = s.cfg.Server
	return &fixed
}

// version is a stable hash of a sorted node list: the same answer always gets the same
// version, in any process.
func version(ns []nodes.Node) string {
	h := sha256.New()
	for _, n := range ns {
		if n.Groups != "" {
			fmt.Fprintf(h, "%s %d %s\n", n.Addr, n.Weight, n.Groups)
			continue
		}
		fmt.Fprintf(h, "%s %d\n", n.Addr, n.Weight)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// unionGroups returns the groups of a and b (nodes.Node.Groups), each once, in name order.
func unionGroups(a, b string) string {
	names := nodes.SplitGroups(a)
	for _, g := range nodes.SplitGroups(b) {
		if !slices.Contains(names, g) {
			names = append(names, g)
		}
	}
	return nodes.JoinGroups(names...)
}

// condition is the comparable form of a round's failures: the names that failed. Their
// reasons are left out: a server that answers NXDOMAIN and SERVFAIL in turn, or times out one
// round in two, is one condition, logged once, not once a round (Status has the latest reason).
func condition(failed []failure) string {
	parts := make([]string, len(failed))
	for i, f := range failed {
		parts[i] = f.name
	}
	slices.Sort(parts)
	return strings.Join(parts, ";")
}

// describe renders failures for a log line or an error.
func describe(failed []failure) string {
	parts := make([]string, len(failed))
	for i, f := range failed {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}
