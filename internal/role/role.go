// Package role holds what a node is for (primary, replica, standby) and the role checks that
// find it out on a probe connection: which query to send for each kind of server and how to read
// its answer. It does no I/O; the prober runs the query and hands the answer to Check.Decode.
package role

import (
	"fmt"
	"strings"
)

// Role is what a node is for.
type Role uint8

const (
	// Unknown: not said by the node source and not checked yet (or roleCheck=none).
	Unknown Role = iota
	// Primary accepts writes.
	Primary
	// Replica is read-only and serves reads.
	Replica
	// Standby is not usable for this tenant now: an OceanBase standby tenant, or a node kept in
	// reserve.
	Standby
)

// String returns "unknown", "primary", "replica" or "standby".
func (r Role) String() string {
	switch r {
	case Primary:
		return "primary"
	case Replica:
		return "replica"
	case Standby:
		return "standby"
	}
	return "unknown"
}

// Parse reads a role name as node sources and DSNs write it: "primary", "replica" or "standby",
// in any case. An empty string is Unknown. Anything else is an error naming the accepted words.
func Parse(s string) (Role, error) {
	switch strings.ToLower(s) {
	case "":
		return Unknown, nil
	case "primary":
		return Primary, nil
	case "replica":
		return Replica, nil
	case "standby":
		return Standby, nil
	}
	return Unknown, fmt.Errorf("role %q: want primary, replica or standby", clip(s))
}

// clip shortens text from a peer or a user for an error message.
func clip(s string) string {
	const max = 32
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
