// Package role holds the role checks that find out what a node is for (nodes.Role) on a probe
// connection (which query to send for each kind of server and how to read its answer) and the
// targets that say which roles a pick may choose. It does no I/O; the prober runs the query and
// hands the answer to Check.Decode.
package role

import "github.com/lbd-go/lbd/nodes"

// The roles, under short names for this package's rules.
const (
	Unknown = nodes.RoleUnknown
	Primary = nodes.RolePrimary
	Replica = nodes.RoleReplica
	Standby = nodes.RoleStandby
)

// Role is nodes.Role.
type Role = nodes.Role

// clip shortens text from a peer or a user for an error message.
func clip(s string) string {
	const max = 32
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
