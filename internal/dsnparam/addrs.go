package dsnparam

import (
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// PlaceholderAddr stands in for an empty address list while go-sql-driver parses the DSN.
const PlaceholderAddr = "placeholder.invalid:1"

// WithPlaceholderAddr puts PlaceholderAddr into an empty "net()" or bare "net" address part,
// found the way go-sql-driver finds it: the last '@' before the last '/'.
func WithPlaceholderAddr(dsn string) string {
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return dsn
	}
	at := strings.LastIndexByte(dsn[:slash], '@')
	netPart := strings.TrimSuffix(dsn[at+1:slash], "()")
	if strings.ContainsAny(netPart, "()") {
		return dsn
	}
	return dsn[:at+1] + netPart + "(" + PlaceholderAddr + ")" + dsn[slash:]
}

// Nodes is the address list of an lb(...) DSN, parsed.
type Nodes struct {
	List    []string              // validated, canonical host:port entries (see nodes.Canonical)
	Weights map[string]int        // the weights of the entries written host:port*weight
	Roles   map[string]nodes.Role // the roles of those written host:port#role or host:port*weight#role
	Zones   map[string]string     // the zones of those ending in ~zone
	Groups  map[string]string     // the groups of those with +group
}

// ParseNodes splits the address list of an lb(...) DSN into its entries; each map of the
// result is nil when no entry has one. Errors: too many entries, an empty entry, a bad entry, an
// address listed twice, group sets that do not fit together.
func ParseNodes(addrs string) (Nodes, error) {
	var ns Nodes
	if err := nodes.CheckCount(strings.Count(addrs, ",") + 1); err != nil {
		return Nodes{}, fmt.Errorf("lbd: proxy list: %w", err)
	}
	seen := make(map[string]bool)
	var list []nodes.Node
	for raw := range strings.SplitSeq(addrs, ",") {
		entry := strings.TrimSpace(raw)
		if entry == "" {
			return Nodes{}, fmt.Errorf("lbd: empty entry in the proxy list (check for a stray comma)")
		}
		n, err := nodes.ParseEntry(entry)
		if err != nil {
			return Nodes{}, fmt.Errorf("lbd: proxy list: %w", err)
		}
		if seen[n.Addr] {
			return Nodes{}, fmt.Errorf("lbd: proxy %q is listed twice", n.Addr)
		}
		seen[n.Addr] = true
		ns.List = append(ns.List, n.Addr)
		list = append(list, nodes.Node{Addr: n.Addr, Groups: n.Groups})
		if n.Weight != 0 {
			ns.Weights = put(ns.Weights, n.Addr, n.Weight)
		}
		if n.Role != nodes.RoleUnknown {
			ns.Roles = put(ns.Roles, n.Addr, n.Role)
		}
		if n.AZ != "" {
			ns.Zones = put(ns.Zones, n.Addr, n.AZ)
		}
		if n.Groups != "" {
			ns.Groups = put(ns.Groups, n.Addr, n.Groups)
		}
	}
	if ns.Groups != nil {
		if err := nodes.CheckGroupSets(list); err != nil {
			return Nodes{}, fmt.Errorf("lbd: proxy list: %w", err)
		}
	}
	return ns, nil
}

// put sets m[k] to v, making m first when it is nil.
func put[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = make(map[string]V)
	}
	m[k] = v
	return m
}
