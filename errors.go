package lbd

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/connect"
	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/logical"
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

// connectError is the *ConnectError of what the connect path saw (connect.Config.Failed).
func connectError(f connect.Failed) error {
	e := &ConnectError{AllDown: f.AllDown, NoTarget: f.NoTarget, Target: Target(f.Target), RoleCheck: f.RoleCheck,
		Group: f.Group, GroupNodes: f.GroupNodes, Isolated: f.Isolated}
	for _, n := range f.Nodes {
		e.Nodes = append(e.Nodes, &NodeError{Addr: n.Addr, State: NodeState(n.State), Role: n.Role, RoleSource: n.RoleSource, Err: n.Err})
	}
	return e
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

// ErrFailoverWaitersFull is returned (wrapped, naming the target and the bound) by a Connect
// that found no node its target accepts while maxFailoverWaiters other Connects already wait
// for one: it fails at once instead of queuing. Retry later, raise maxFailoverWaiters, or shed
// load until the switchover ends.
var ErrFailoverWaitersFull = health.ErrFailoverWaitersFull

// ErrPrimaryChanged is returned (wrapped, with the server's error) when a statement inside a
// transaction was refused because its node is no longer the primary (exception.NotPrimary):
// the transaction is lost and must be started again, on the new primary; the connection is
// retired. Outside a transaction lbd hides the change: the refused statement did not run, so
// database/sql runs it again on a new connection, which waits up to FailoverTimeout for the new
// primary.
var ErrPrimaryChanged = physical.ErrPrimaryChanged

// ErrPartialRun is returned (wrapped, with the server's error) when a server refused a statement
// of a multi-statement text (multiStatements=true) after earlier statements of the same text
// had run: the text is not run again, since running it again would repeat what ran. The caller
// must find out what ran and finish the work itself; the connection is retired.
var ErrPartialRun = health.ErrPartialRun

// RefusedError is a statement a server refused before running any of it, because the node is
// not the primary (exception.NotPrimary: MySQL/MariaDB 1290 and 1836, OceanBase 4782). It
// wraps the server's error (errors.As finds the *mysql.MySQLError with its number, SQLSTATE
// and message) and driver.ErrBadConn, which tells database/sql that the statement may run again
// on another connection. database/sql does so a few times; when it gives up, the caller gets
// this error.
type RefusedError struct {
	Addr string // the node that refused, "host:port"
	Err  error  // the server's error
}

// Error names the node and quotes the server's error.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("lbd: %s refused the statement as not the primary; none of it ran: %v", e.Addr, e.Err)
}

// Unwrap returns the server's error and driver.ErrBadConn.
func (e *RefusedError) Unwrap() []error { return []error{e.Err, driver.ErrBadConn} }

// ShutdownError is a statement a server refused before running any of it because it is
// shutting down (ER_SERVER_SHUTDOWN, 1053; exception.ServerShutdown). It wraps the server's
// error and driver.ErrBadConn, so database/sql runs the statement again on another connection,
// which goes to another node: the one that refused is drained from that moment. When
// database/sql's retries end, the caller gets this error.
type ShutdownError struct {
	Addr string // the node that refused, "host:port"
	Err  error  // the server's error
}

// Error names the node and quotes the server's error.
func (e *ShutdownError) Error() string {
	return fmt.Sprintf("lbd: %s refused the statement while shutting down; none of it ran: %v", e.Addr, e.Err)
}

// Unwrap returns the server's error and driver.ErrBadConn.
func (e *ShutdownError) Unwrap() []error { return []error{e.Err, driver.ErrBadConn} }

// isRefusal reports a RefusedError in err's tree.
func isRefusal(err error) bool {
	_, ok := errors.AsType[*RefusedError](err)
	return ok
}

// ErrPinnedToReplica is returned, before anything is sent, when a statement the read/write split
// cannot prove replica-safe (a write, a locking read, a named lock, anything
// sqlclass.ReplicaSession does not accept) meets a logical connection pinned to a replica: by a
// read-only transaction (BeginTx with ReadOnly), or by session state (SET @v, ...) set in one;
// or pinned by a transaction or session state to a primary that the role check has since
// found a replica (a switchover). Running it there could write on a replica; moving it to the primary would lose the session
// state, so it runs nowhere. Fix: run the transaction read-write (a read-write transaction and
// the state it leaves live on the primary), or give its context OnPrimary. database/sql does
// not hand such a logical connection out again once it returns to the pool.
var ErrPinnedToReplica = logical.ErrPinnedToReplica

// ExceptionSorter returns the sorter the Connector judges errors with (WithExceptionSorter, or
// the one the exceptionSorter DSN parameter names).
func (c *Connector) ExceptionSorter() exception.Sorter { return c.cfg.Sorter }

// NodeOfError reports the node whose connection returned err (or an error err wraps) and had it
// judged fatal within the last FatalErrorWindow. Errors are matched by identity (==), so it
// answers for the very error value a caller got back; ok is false when no such error was
// recorded, or when the same value came from two nodes (sentinels such as
// mysql.ErrInvalidConn). ORM integrations use it to name the node in their logs.
func (c *Connector) NodeOfError(err error) (addr string, ok bool) { return c.health.NodeOfError(err) }
