package logical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/internal/causal"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/sqlclass"
	"github.com/lbd-go/lbd/nodes"
)

// Read/write splitting (readWriteSplit=true, statement mode): each statement binds a physical
// connection on a node of the role it needs. Reads proven replica-safe (sqlclass.ReplicaRead:
// one plain SELECT whose every function is on an allow-list of functions a replica answers as
// the primary would, with no lock clause, session effect, system variable or per-server schema)
// go to the least busy node that is not a standby, replicas and primary alike, as Taobao's UMP
// balanced reads over both; everything else goes to a primary: writes, locking reads, named
// locks and other per-server state, anything the classifier does not know, everything inside a
// transaction and everything on a pinned logical connection. A logical connection pinned to a
// replica connection (a read-only transaction, or session state set in one) runs there only
// what sqlclass.ReplicaSession accepts; anything else fails with ErrPinnedToReplica.
//
// Read-your-writes by time: after a statement went to the primary in a scope, that scope's
// reads go to the primary too for ReadAfterWrite (readAfterWriteMillis, default 300 ms, UMP's
// figure), so a caller never misses what it just wrote while the replicas catch up. While the
// lag floor keeps a lagging replica serving (nodetable's FloorLag), the window is at least
// that replica's lag plus a second. The scope
// is the whole Connector by default, or the context ReadYourWrites returns, so that one HTTP
// request or job gets its own guarantee without sending every caller's reads to the primary.

// splitState is a Connector's read/write split.
type splitState struct {
	on        bool
	window    int64         // ReadAfterWrite, nanoseconds; 0: no read-your-writes
	read      role.Target   // where replica-safe reads go: readTarget, or readTargetWithPrimary
	lastWrite atomic.Int64  // the Connector-wide scope's latest write, unix nanoseconds
	rywReads  atomic.Uint64 // reads sent to the primary by read-your-writes
	causal    causalState   // readConsistency=gtid
}

// init sets the split up from cfg; New calls it once, before any statement.
func (s *splitState) init(cfg *Config) {
	s.on, s.window = cfg.Split, int64(cfg.ReadAfterWrite)
	s.read = readTarget
	if cfg.PrimaryReads {
		s.read = readTargetWithPrimary
	}
	s.causal.on = cfg.Split && cfg.Causal
	s.causal.flavor.Store(-1)
	if cfg.CausalGalera {
		s.causal.flavor.Store(int32(causal.Galera))
	}
}

// writeTarget is where writes go.
const writeTarget = role.PrimaryOnly

// Where replica-safe reads go: the replicas while one serves, and the primary only when none
// does (readTarget, the default: a split is turned on to take reads off the primary, and
// MaxScale's readwritesplit keeps them off it by default, master_accept_reads=false); or every
// node, the primary as one more reader (readTargetWithPrimary, primaryReads=true).
const (
	readTarget            = role.PreferReplica
	readTargetWithPrimary = role.Any
)

// rywScope is one read-your-writes scope.
type rywScope struct {
	lastWrite  atomic.Int64
	pos        atomic.Pointer[causal.Position] // readConsistency=gtid: the position its writes reached
	uncaptured atomic.Int64                    // readConsistency=gtid: the latest write whose position could not be read, unix nanoseconds
	hint       causalHint                      // readConsistency=gtid: see causalHint
}

type rywKey struct{}

// primaryKey marks a context whose statements go to the primary (OnPrimary).
type primaryKey struct{}

// OnPrimary marks ctx so that its statements go to the primary (lbd.OnPrimary documents it).
func OnPrimary(ctx context.Context) context.Context {
	return context.WithValue(ctx, primaryKey{}, true)
}

// ReadYourWrites gives ctx a read-your-writes scope of its own (lbd.ReadYourWrites documents
// it).
func ReadYourWrites(ctx context.Context) context.Context {
	return context.WithValue(ctx, rywKey{}, &rywScope{})
}

// lastWriteOf returns where the scope of ctx keeps its latest write.
func (m *Mode) lastWriteOf(ctx context.Context) *atomic.Int64 {
	if s, ok := ctx.Value(rywKey{}).(*rywScope); ok {
		return &s.lastWrite
	}
	return &m.split.lastWrite
}

// routing is where the split sends one statement and what the statement counts as once it ran.
type routing struct {
	target role.Target
	write  bool // a write: once it ran, it starts its scope's read-your-writes window
	ryw    bool // a read sent to the primary by read-your-writes

	group string // the group its context chooses (lbd.InGroup; "": the default picks)
}

// replicaHintTarget is where a replica-safe read hinted /* lbd:replica */ goes: the replicas,
// and the primary when none is up (with primaryReads, where unhinted reads may go to the
// primary too).
const replicaHintTarget = role.PreferReplica

// readRouted reports whether t is a target route gives replica-safe reads only.
func readRouted(t role.Target) bool {
	return t == readTarget || t == readTargetWithPrimary || t == replicaHintTarget
}

// route returns where a statement with text query and effects eff (its sqlclass.Classify, which
// the caller holds already) goes. Without the split every statement has
// the Connector's target and counts as nothing.
//
// With routingHints, a leading hint comment (sqlclass.RoutingHint) acts after the replica-safety
// proof, never before it: /* lbd:primary */ sends a replica-safe read to the primary, as
// OnPrimary does; /* lbd:replica */ sends a replica-safe read to the replicas first, which
// narrows it only under primaryReads (by default such reads go there already), and changes
// nothing else: OnPrimary, read-your-writes and the causal wait
// still apply, and a text that is not proven replica-safe goes to the primary, hint or not.
func (m *Mode) route(ctx context.Context, query string, eff sqlclass.Effect) routing {
	rt := m.routeRole(ctx, query, eff)
	rt.group, _ = physical.GroupOf(ctx)
	return rt
}

// routeRole is route but for the group.
func (m *Mode) routeRole(ctx context.Context, query string, eff sqlclass.Effect) routing {
	if !m.split.on {
		return routing{target: m.cfg.Target}
	}
	if !sqlclass.ReplicaReadClassified(query, eff) {
		return routing{target: writeTarget, write: true}
	}
	hint := sqlclass.NoHint
	if m.cfg.RoutingHints {
		hint = sqlclass.RoutingHint(query)
	}
	if ctx.Value(primaryKey{}) != nil || hint == sqlclass.HintPrimary {
		return routing{target: writeTarget}
	}
	read := m.split.read
	if hint == sqlclass.HintReplica {
		read = replicaHintTarget
	}
	if m.split.causal.on {
		// After a write whose position could not be read (its connection failed right after
		// it), no wait can cover it: the scope's reads go to the primary for the window, as
		// with readConsistency=time.
		if w := m.split.window; w > 0 && m.cfg.Now().UnixNano()-m.uncapturedOf(ctx).Load() < w {
			return routing{target: writeTarget, ryw: true}
		}
		return routing{target: read} // a read of a scope with a position waits on the replica (awaitPosition)
	}
	if w := m.split.window; w > 0 {
		if fl := m.table.FloorLag(); fl > 0 {
			// A replica the lag floor keeps serving is this far behind (read in whole
			// seconds): the window must cover it.
			w = max(w, int64(fl+time.Second))
		}
		if m.cfg.Now().UnixNano()-m.lastWriteOf(ctx).Load() < w {
			return routing{target: writeTarget, ryw: true}
		}
	}
	return routing{target: read}
}

// noteWrite starts the read-your-writes window of ctx's scope.
func (m *Mode) noteWrite(ctx context.Context) {
	if m.split.on && m.split.window > 0 {
		m.lastWriteOf(ctx).Store(m.cfg.Now().UnixNano())
	}
}

// fits reports whether the bound physical connection p serves the logical connection's current
// target (always without the split) and is on a node of its current group.
func (l *logicalConn) fits(p *physical.Conn) bool {
	return (!l.m.split.on || l.want.Accepts(l.m.table.Role(p.Node().TN()))) && l.m.table.InGroup(p.Node().TN(), l.wantGroup)
}

// strandedOnReplica reports whether the logical connection is pinned to a physical connection
// whose node is not the primary now: session state or a transaction lives there, so a
// statement that needs the primary can neither run there nor move. The pin may have been
// bound for a read, or on the primary before the role check found that node a replica (a
// switchover). See ErrPinnedToReplica.
func (l *logicalConn) strandedOnReplica() bool {
	return l.m.split.on && l.pinned() && l.phys != nil &&
		l.m.table.Role(l.phys.Node().TN()) != nodes.RolePrimary
}

// strandedErr is what a statement that needs the primary gets on a stranded logical connection,
// with nothing sent: ErrPinnedToReplica when the pin was made on a replica (a read-only
// transaction or session state set in one), ErrPrimaryChanged when it was made on the primary
// and that node has since been found a replica: the transaction or session state is lost with
// the switchover, as when the server refuses the statement.
func (l *logicalConn) strandedErr() error {
	if l.boundForRead {
		return ErrPinnedToReplica
	}
	return fmt.Errorf("%w (%s is no longer the primary)", physical.ErrPrimaryChanged, l.phys.Node().Addr())
}

// ErrPinnedToReplica is returned, before anything is sent, when a statement the read/write split
// cannot prove replica-safe (a write, a locking read, a named lock, anything
// sqlclass.ReplicaSession does not accept) meets a logical connection pinned to a replica: by a
// read-only transaction (BeginTx with ReadOnly), or by session state (SET @v, ...) set in one,
// or by a transaction or session state on a primary that the role check has since found a
// replica.
// lbd.ErrPinnedToReplica documents it for users.
var ErrPinnedToReplica = errors.New("lbd: the statement must run on the primary, but its connection is pinned to a replica by a read-only transaction or by session state set in one; run the transaction read-write or use lbd.OnPrimary")

// txTarget is where a transaction goes: a read-only one (BeginTx with ReadOnly) may run on a
// replica, as the application asked, unless its context says OnPrimary; any other on the
// primary.
func (m *Mode) txTarget(ctx context.Context, opts driver.TxOptions) role.Target {
	if !m.split.on {
		return m.cfg.Target
	}
	if opts.ReadOnly && ctx.Value(primaryKey{}) == nil {
		return m.split.read
	}
	return writeTarget
}

// countRouted counts a statement of the split that ran on p, once: a read when it was routed
// as one (to any node), a write otherwise, and a read that read-your-writes sent to the
// primary.
func (m *Mode) countRouted(p *physical.Conn, rt routing) {
	if !m.split.on || p == nil {
		return
	}
	m.cfg.CountRouted(p.Node(), rt.write)
	if rt.ryw {
		m.split.rywReads.Add(1)
	}
}

// RYWReads returns how many reads read-your-writes sent to the primary.
func (m *Mode) RYWReads() uint64 { return m.split.rywReads.Load() }
