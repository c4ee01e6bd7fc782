package nodes

import (
	"fmt"
	"strconv"
	"strings"
)

// WeightSep separates an address from its weight in an entry of a static list (the DSN's
// lb(...) list, Connector.SetNodes): "10.0.0.1:2883*2". '*' appears in no host name, IPv6
// address or port, so an entry cannot be read two ways.
const WeightSep = '*'

// RoleSep separates an address, or its weight, from its role in an entry of a static list:
// "10.0.0.1:2883#replica", "10.0.0.1:2883*3#replica". Like '*', '#' appears in no host name,
// IPv6 address or port; and it is none of the characters the DSN itself splits on ('@' between
// user and address, '/', '?', ',', '(' and ')').
const RoleSep = '#'

// ZoneSep separates an address, its weight or its role from its zone in an entry of a static
// list, last: "10.0.0.1:2883~az1", "10.0.0.1:2883*3#replica~az1". '~' appears in no host name,
// IPv6 address or port, and go-sql-driver's DSN parser passes it through inside lb(...) (it
// splits only on '@', '/', '(' and ')'), where '@' and '%' would not do.
const ZoneSep = '~'

// MaxZoneLen bounds a zone's name.
const MaxZoneLen = 64

// CheckZone returns an error for a zone name that is not 1 to MaxZoneLen letters, digits, '-',
// '_' or '.' (cloud zone names such as "us-east-1a" or "cn-hangzhou-h" are), saying what is
// allowed.
func CheckZone(z string) error {
	if z == "" || len(z) > MaxZoneLen {
		return fmt.Errorf("nodes: zone %s must be 1 to %d characters", quote(z), MaxZoneLen)
	}
	for i := 0; i < len(z); i++ {
		c := z[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("nodes: zone %s has the character %q; use letters, digits, '-', '_' and '.'", quote(z), rune(c))
		}
	}
	return nil
}

// ParseEntry reads one static-list entry, "host:port", "host:port*weight", "host:port#role" or
// "host:port*weight#role" (the weight first), each optionally followed by groups, "+group" once
// per group (see GroupSep and CheckGroups), and then by "~zone" (see ZoneSep and CheckZone),
// into a Node with a canonical address (see Canonical). The weight is a decimal number from 1 to MaxWeight; an entry without one has
// Weight 0 (DefaultWeight). A weight of 0 is refused here, unlike from a source: written by hand
// it would most likely mean "no traffic", which lbd has no weight for. The role is one ParseRole
// reads other than "": primary, replica or standby; an entry without one has RoleUnknown.
func ParseEntry(entry string) (Node, error) {
	entry = strings.TrimSpace(entry)
	n := Node{}
	rest, zone, hasZone := strings.Cut(entry, string(ZoneSep))
	if hasZone {
		if strings.ContainsAny(zone, string(WeightSep)+string(RoleSep)+string(GroupSep)) {
			return Node{}, fmt.Errorf("nodes: %s has its zone before its weight, role or groups; write the zone last: host:port%cweight%crole%cgroup%czone",
				quote(entry), WeightSep, RoleSep, GroupSep, ZoneSep)
		}
		if err := CheckZone(zone); err != nil {
			return Node{}, fmt.Errorf("%w (after %q in %s; leave \"%c...\" out when the zone is not known)", err, ZoneSep, quote(rest), ZoneSep)
		}
		n.AZ = zone
	}
	groups, hasGroups := "", false
	if i := strings.IndexByte(rest, GroupSep); i > 0 && rest[i-1] != WeightSep && rest[i-1] != RoleSep {
		// (A '+' right after '*' or '#' is a signed weight or a bad role, refused below.)
		rest, groups, hasGroups = rest[:i], rest[i+1:], true
	}
	if hasGroups {
		if strings.ContainsAny(groups, string(WeightSep)+string(RoleSep)) {
			return Node{}, fmt.Errorf("nodes: %s has its groups before its weight or role; write them after: host:port%cweight%crole%cgroup",
				quote(entry), WeightSep, RoleSep, GroupSep)
		}
		check := CheckGroups
		if groups == "" {
			check = CheckGroup // a '+' with nothing after it
		}
		if err := check(groups); err != nil {
			return Node{}, fmt.Errorf("%w (after %q in %s: host:port%cgroup, or host:port%cgroup1%cgroup2 for several)", err, GroupSep, quote(rest), GroupSep, GroupSep, GroupSep)
		}
		n.Groups = groups
	}
	rest, roleName, hasRole := strings.Cut(rest, string(RoleSep))
	addr, w, hasWeight := strings.Cut(rest, string(WeightSep))
	if hasRole {
		if strings.ContainsRune(roleName, WeightSep) {
			return Node{}, fmt.Errorf("nodes: %s has its weight after its role; write the weight first: host:port%cweight%crole",
				quote(entry), WeightSep, RoleSep)
		}
		r, err := ParseRole(roleName)
		if err != nil || r == RoleUnknown {
			return Node{}, fmt.Errorf("nodes: %s has role %s, want primary, replica or standby after %q (host:port%crole, or host:port%cweight%crole; leave \"%c...\" out when the role is not known)",
				quote(addr), quote(roleName), RoleSep, RoleSep, WeightSep, RoleSep, RoleSep)
		}
		n.Role = r
	}
	if hasWeight {
		v, err := strconv.Atoi(w)
		if err != nil || v < 1 || v > MaxWeight || strings.TrimLeft(w, "0123456789") != "" {
			return Node{}, fmt.Errorf("nodes: %s has weight %s, want a whole number from 1 to %d after %q (leave \"%c...\" out for the default weight, %d)",
				quote(addr), quote(w), MaxWeight, WeightSep, WeightSep, DefaultWeight)
		}
		n.Weight = v
	}
	canon, err := Canonical(addr)
	if err != nil {
		return Node{}, err
	}
	n.Addr = canon
	return n, nil
}

// Entry returns the static-list spelling of n that ParseEntry reads back: its address,
// "*weight" when it has a weight, "#role" when its role is known, "+group" for each of its
// groups, in the order Groups has them, and "~zone" when it has one.
func (n Node) Entry() string {
	e := n.Addr
	if n.Weight != 0 {
		e += string(WeightSep) + strconv.Itoa(n.Weight)
	}
	if n.Role != RoleUnknown {
		e += string(RoleSep) + n.Role.String()
	}
	if n.Groups != "" {
		e += string(GroupSep) + n.Groups
	}
	if n.AZ != "" {
		e += string(ZoneSep) + n.AZ
	}
	return e
}
