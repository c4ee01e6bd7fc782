package lbd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/nodes"
)

// MaxErrorMessage is the most bytes of a proxy's error message (the text of a MySQL ERR
// packet) that lbd keeps: 512, MySQL's own limit (MYSQL_ERRMSG_SIZE in include/mysql_com.h; no
// MySQL server sends a longer one). A longer message is cut at a UTF-8 boundary and ends in
// "...", where lbd takes it in, so the *mysql.MySQLError the application gets, NodeStats'
// LastError and RoleError, Stats.Recent, lbd's log lines and the status page all carry the cut
// text.
const MaxErrorMessage = physical.MaxErrorMessage

// ErrClosed is returned by Connect after Close.
var ErrClosed = errors.New("lbd: connector is closed")

// NodeError is the failure of one node in a Connect.
type NodeError struct {
	Addr  string     // the node, "host:port"
	State NodeState  // the node's state when the error was reported
	Role  nodes.Role // the node's role then (RoleUnknown when none is known)
	// RoleSource says where Role came from: "role check NAME" (roleCheck) or "node list" (the
	// DSN's host:port#role, or a node source's document); "" when the role is unknown.
	RoleSource string
	Err        error // the cause (a dial error, a *mysql.MySQLError, a probe failure, a failed role check, ...); nil when the node was not tried and has no failure on record
}

// Error returns "addr: cause", with the node's state when it was not up and its role, and where
// the role came from, when it is known.
func (e *NodeError) Error() string {
	var notes []string
	if e.State != StateUp {
		notes = append(notes, e.State.String())
	}
	if e.Role != nodes.RoleUnknown {
		r := e.Role.String()
		if e.RoleSource != "" {
			r += " by " + e.RoleSource
		}
		notes = append(notes, r)
	}
	head := e.Addr
	if len(notes) > 0 {
		head += " (" + strings.Join(notes, ", ") + ")"
	}
	return head + ": " + errString(e.Err)
}

// Unwrap returns the cause, so errors.Is and errors.As see through a NodeError.
func (e *NodeError) Unwrap() error { return e.Err }

func errString(err error) string {
	if err == nil {
		return "no failure"
	}
	return err.Error()
}

// ConnectError is returned by Connect when no node gave a connection. It names every node: the
// ones tried in this Connect with their errors, and the ones that were down with their last
// failure. errors.Is and errors.As look through every node's error (standard errors.Join-style
// Unwrap).
type ConnectError struct {
	// AllDown is true when no node was up: none was tried but in panic mode (see the package
	// documentation), whose dials are listed first in Nodes with state down.
	AllDown bool
	// NoTarget is true when nodes were up but none of a role the target accepts (Target), even
	// after waiting FailoverTimeout for one; none was tried.
	NoTarget bool
	// Target is the target no up node served: the Connector's, or the read/write split's
	// primary for a write.
	Target Target
	// RoleCheck is true when a role check (roleCheck) decides the roles, false when they come
	// from the node list.
	RoleCheck bool
	// Group is the group the picks kept to (InGroup, or the Connector's group), "" when none;
	// GroupNodes counts the known nodes in it. Isolated is true when the picks chose no group
	// and kept out of isolatedGroups.
	Group      string
	GroupNodes int
	Isolated   bool
	// Nodes holds one entry per known node: tried ones first, in the order tried.
	Nodes []*NodeError
}

// Error names every node with its failure, the first 20 of them; Nodes and Unwrap hold all.
func (e *ConnectError) Error() string {
	var b strings.Builder
	switch {
	case e.NoTarget && e.Group != "":
		fmt.Fprintf(&b, "lbd: no proxy of group %q that is up serves target=%s after waiting failoverTimeoutMillis (%d of the proxies are in the group): ", e.Group, e.Target, e.GroupNodes)
	case e.NoTarget && e.Isolated:
		fmt.Fprintf(&b, "lbd: no proxy outside isolatedGroups that is up serves target=%s after waiting failoverTimeoutMillis (%d of the proxies are outside them): ", e.Target, e.GroupNodes)
	case e.NoTarget && e.RoleCheck:
		fmt.Fprintf(&b, "lbd: no proxy that is up serves target=%s after waiting failoverTimeoutMillis (a switchover may still be under way; the roles and any failed role check follow): ", e.Target)
	case e.NoTarget:
		fmt.Fprintf(&b, "lbd: no proxy that is up serves target=%s: the roles come from the node list, and no up proxy has one the target accepts (give one the role in the list, or set roleCheck): ", e.Target)
	case e.AllDown:
		b.WriteString("lbd: every proxy is down: ")
	default:
		b.WriteString("lbd: no proxy accepted a connection: ")
	}
	for i, n := range e.Nodes {
		if i == maxNodesInError {
			fmt.Fprintf(&b, "; and %d more", len(e.Nodes)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(n.Error())
	}
	return b.String()
}

// maxNodesInError bounds the message of a ConnectError over a large cluster; Nodes and Unwrap
// still hold every node.
const maxNodesInError = 20

// Unwrap returns every node's error.
func (e *ConnectError) Unwrap() []error {
	out := make([]error, len(e.Nodes))
	for i, n := range e.Nodes {
		out[i] = n
	}
	return out
}

// ErrProtocol is wrapped by every error lbd returns when a proxy broke the MySQL protocol: a
// packet too short for its kind, a length that runs past its packet, a result announcing more
// columns than any server sends, or a packet go-sql-driver could not parse. The physical
// connection is closed underneath and never reused, and the failure counts against the node like
// a fatal error. Test with errors.Is(err, lbd.ErrProtocol).
var ErrProtocol = physical.ErrProtocol
