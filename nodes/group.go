package nodes

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Groups name sets of nodes a pick may be kept to (lbd.InGroup, the DSN's group), such as the
// replicas set aside for analytics and reporting: MaxScale's server labels, TiProxy's labels,
// MySQL Router's tags. A node belongs to no group, one or several.

// GroupSep separates an address, its weight or its role from its groups in an entry of a static
// list, one before each group, after the role and before the zone:
// "10.0.0.3:2883#replica+analytics", "10.0.0.4:2883*2+analytics+reporting~az1". '+' appears in
// no host name, IPv6 address or port, and go-sql-driver's DSN parser passes it through inside
// lb(...) untouched (it unescapes only the parameters after '?').
const GroupSep = '+'

// MaxGroupLen bounds a group's name, in bytes.
const MaxGroupLen = 32

// MaxGroupsPerNode is the most groups one node may belong to.
const MaxGroupsPerNode = 8

// MaxGroupSets is the most distinct sets of groups the nodes of one list may have (the nodes of
// no group count as one set). A pick looks at the nodes of each set its group takes apart, so
// its cost grows with their number, never with the number of nodes; the bound keeps it small.
const MaxGroupSets = 16

// CheckGroup returns an error for a group name that is not 1 to MaxGroupLen lower-case ASCII
// letters, digits, '-' and '_', saying what is allowed.
func CheckGroup(name string) error {
	if name == "" || len(name) > MaxGroupLen {
		return fmt.Errorf("nodes: group %s must be 1 to %d characters", quote(name), MaxGroupLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case 'A' <= c && c <= 'Z':
			return fmt.Errorf("nodes: group %s has an upper-case letter; write group names in lower case (%s)", quote(name), quote(strings.ToLower(name)))
		default:
			return fmt.Errorf("nodes: group %s has the character %q; use lower-case letters, digits, '-' and '_'", quote(name), rune(c))
		}
	}
	return nil
}

// CheckGroups returns an error for a node's groups, written as in Node.Groups (names joined by
// GroupSep), with more than MaxGroupsPerNode names, a name CheckGroup refuses (an empty one
// among them: a stray GroupSep), or a name given twice. "" (no group) is fine.
func CheckGroups(groups string) error {
	if groups == "" {
		return nil
	}
	if n := strings.Count(groups, string(GroupSep)) + 1; n > MaxGroupsPerNode {
		return fmt.Errorf("nodes: %d groups, more than the %d a node may belong to", n, MaxGroupsPerNode)
	}
	names := strings.Split(groups, string(GroupSep))
	for i, g := range names {
		if err := CheckGroup(g); err != nil {
			return err
		}
		if slices.Contains(names[:i], g) {
			return fmt.Errorf("nodes: group %s is given twice", quote(g))
		}
	}
	return nil
}

// JoinGroups writes group names as Node.Groups holds them: sorted, joined by GroupSep ("" for
// none). It checks nothing; see CheckGroups.
func JoinGroups(names ...string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(s, string(GroupSep))
}

// SplitGroups returns the names of groups written as in Node.Groups (nil for "").
func SplitGroups(groups string) []string {
	if groups == "" {
		return nil
	}
	return strings.Split(groups, string(GroupSep))
}

// InGroup reports whether groups, written as in Node.Groups, has the group name.
func InGroup(groups, name string) bool {
	for rest := groups; rest != ""; {
		var g string
		g, rest, _ = strings.Cut(rest, string(GroupSep))
		if g == name {
			return true
		}
	}
	return false
}

// CheckGroupSets returns an error for a list whose nodes have groups CheckGroups refuses, or
// more than MaxGroupSets distinct sets of groups (as Set.Validate does).
func CheckGroupSets(list []Node) error {
	if err := checkGroupSets(list); err != nil {
		return errors.New("nodes: " + err.Error())
	}
	return nil
}

// checkGroupSets is CheckGroupSets without the "nodes: " prefix on its errors.
func checkGroupSets(list []Node) error {
	var sets map[string]bool
	for _, n := range list {
		if n.Groups == "" {
			continue
		}
		if err := CheckGroups(n.Groups); err != nil {
			return fmt.Errorf("%s: %s", quote(n.Addr), strings.TrimPrefix(err.Error(), "nodes: "))
		}
		if sets == nil {
			sets = map[string]bool{"": true}
		}
		sets[JoinGroups(SplitGroups(n.Groups)...)] = true
	}
	if len(sets) > MaxGroupSets {
		return fmt.Errorf("the nodes belong to %d distinct sets of groups (no group counting as one), more than %d: "+
			"give nodes of one purpose the same groups", len(sets), MaxGroupSets)
	}
	return nil
}
