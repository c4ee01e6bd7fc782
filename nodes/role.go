package nodes

import (
	"fmt"
	"strings"
)

// Role is what a node is for. A source may report it (Node.Role); otherwise lbd's role check
// finds it on the probe connection (roleCheck), or it stays unknown.
type Role uint8

const (
	// RoleUnknown: not reported by the source and not checked (yet, or roleCheck=none).
	RoleUnknown Role = iota
	// RolePrimary accepts writes.
	RolePrimary
	// RoleReplica is read-only and serves reads.
	RoleReplica
	// RoleStandby is not usable now (an OceanBase standby tenant, a Galera node that is not
	// Synced in the primary component, a Group Replication member that is not ONLINE): no new
	// connection goes to it, whatever the target.
	RoleStandby
)

// NumRoles is how many roles there are; tables indexed by Role have this length.
const NumRoles = 4

// String returns "unknown", "primary", "replica" or "standby".
func (r Role) String() string {
	switch r {
	case RolePrimary:
		return "primary"
	case RoleReplica:
		return "replica"
	case RoleStandby:
		return "standby"
	}
	return "unknown"
}

// ParseRole reads a role as sources and DSNs write it: "primary", "replica" or "standby", in any
// case; "" is RoleUnknown. Anything else is an error naming the accepted words.
func ParseRole(s string) (Role, error) {
	switch strings.ToLower(s) {
	case "":
		return RoleUnknown, nil
	case "primary":
		return RolePrimary, nil
	case "replica":
		return RoleReplica, nil
	case "standby":
		return RoleStandby, nil
	}
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return RoleUnknown, fmt.Errorf("role %q: want primary, replica or standby", s)
}
