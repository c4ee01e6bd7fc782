package role

import (
	"fmt"
	"strings"
)

// Set is a set of roles, one bit per Role.
type Set uint8

// Of returns the set holding roles.
func Of(roles ...Role) Set {
	var s Set
	for _, r := range roles {
		s |= 1 << r
	}
	return s
}

// Has reports whether r is in s.
func (s Set) Has(r Role) bool { return s&(1<<r) != 0 }

// Target says which nodes a pick may choose, by role, after libpq's target_session_attrs. A
// standby is never chosen: it cannot serve this tenant now. A node whose role is unknown
// (no role check, and no role from the source) counts as any role a target accepts, except
// for primary and replica, which ask for a role that is known.
type Target uint8

const (
	// Any: every node that is not a standby.
	Any Target = iota
	// PrimaryOnly: primaries only; with none up, nothing.
	PrimaryOnly
	// PreferPrimary: primaries; with none up, replicas and nodes of unknown role.
	PreferPrimary
	// ReplicaOnly: replicas only; with none up, nothing.
	ReplicaOnly
	// PreferReplica: replicas; with none up, primaries and nodes of unknown role.
	PreferReplica
)

var targetNames = [...]string{"any", "primary", "prefer-primary", "replica", "prefer-replica"}

// String returns the target's name as the DSN writes it.
func (t Target) String() string {
	if int(t) < len(targetNames) {
		return targetNames[t]
	}
	return "unknown"
}

// ParseTarget reads the target DSN parameter: any, primary, prefer-primary, replica or
// prefer-replica, in any case; "" is any.
func ParseTarget(s string) (Target, error) {
	if s == "" {
		return Any, nil
	}
	for i, n := range targetNames {
		if strings.EqualFold(s, n) {
			return Target(i), nil
		}
	}
	return Any, fmt.Errorf("target=%q: want any, primary, prefer-primary, replica or prefer-replica", clip(s))
}

// Tiers returns the roles the target accepts, best first: a pick takes the least-loaded node
// of the first tier that has one up, and tries the second only when the first has none. The
// second tier is empty for targets without a fallback.
func (t Target) Tiers() (first, second Set) {
	switch t {
	case PrimaryOnly:
		return Of(Primary), 0
	case PreferPrimary:
		return Of(Primary), Of(Replica, Unknown)
	case ReplicaOnly:
		return Of(Replica), 0
	case PreferReplica:
		return Of(Replica), Of(Primary, Unknown)
	}
	return Of(Unknown, Primary, Replica), 0
}

// Accepts reports whether a node of role r may serve the target in either tier: what decides
// whether an existing connection stays when its node's role changes.
func (t Target) Accepts(r Role) bool {
	first, second := t.Tiers()
	return (first | second).Has(r)
}
