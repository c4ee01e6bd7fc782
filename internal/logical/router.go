package logical

import (
	"context"
	"database/sql/driver"
	"sync/atomic"

	"github.com/lbd-go/lbd/internal/causal"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// Read/write splitting (readWriteSplit=true, statement mode): each statement binds a physical
// connection on a node of the role it needs. Reads that a replica may run (sqlclass.ReplicaRead:
// one SELECT without locks, session effects or a second statement) go to the least busy node
// that is not a standby, replicas and primary alike, as Taobao's UMP balanced reads over both;
// everything else goes to a primary: writes, locking reads, anything the classifier cannot prove
// read-only, everything inside a transaction and everything on a pinned logical connection.
//
// Read-your-writes by time: after a statement went to the primary in a scope, that scope's
// reads go to the primary too for ReadAfterWrite (readAfterWriteMillis, default 300 ms, UMP's
// figure), so a caller never misses what it just wrote while the replicas catch up. The scope
// is the whole Connector by default, or the context ReadYourWrites returns, so that one HTTP
// request or job gets its own guarantee without sending every caller's reads to the primary.

// splitState is a Connector's read/write split.
type splitState struct {
	on        bool
	window    int64         // ReadAfterWrite, nanoseconds; 0: no read-your-writes
	lastWrite atomic.Int64  // the Connector-wide scope's latest write, unix nanoseconds
	rywReads  atomic.Uint64 // reads sent to the primary by read-your-writes
	causal    causalState   // readConsistency=gtid
}

// init sets the split up from cfg; New calls it once, before any statement.
func (s *splitState) init(cfg *Config) {
	s.on, s.window = cfg.Split, int64(cfg.ReadAfterWrite)
	s.causal.on = cfg.Split && cfg.Causal
	s.causal.flavor.Store(-1)
}

// writeTarget is where writes go; readTarget where replica reads go.
const (
	writeTarget = role.PrimaryOnly
	readTarget  = role.Any
)

// rywScope is one read-your-writes scope.
type rywScope struct {
	lastWrite atomic.Int64
	pos       atomic.Pointer[causal.Position] // readConsistency=gtid: the position its writes reached
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

// route returns the target a statement with text query binds for, and whether it counts as a
// write (it starts its scope's read-your-writes window once it ran). Without the split every
// statement has the Connector's target and nothing counts.
func (m *Mode) route(ctx context.Context, query string) (target role.Target, write bool) {
	if !m.split.on {
		return m.cfg.Target, false
	}
	if !sqlclass.ReplicaRead(query) {
		return writeTarget, true
	}
	if ctx.Value(primaryKey{}) != nil {
		return writeTarget, false
	}
	if m.split.causal.on {
		return readTarget, false // a read of a scope with a position waits on the replica (awaitPosition)
	}
	if w := m.split.window; w > 0 && m.cfg.Now().UnixNano()-m.lastWriteOf(ctx).Load() < w {
		m.split.rywReads.Add(1)
		return writeTarget, false
	}
	return readTarget, false
}

// noteWrite starts the read-your-writes window of ctx's scope.
func (m *Mode) noteWrite(ctx context.Context) {
	if m.split.on && m.split.window > 0 {
		m.lastWriteOf(ctx).Store(m.cfg.Now().UnixNano())
	}
}

// fits reports whether the bound physical connection p serves the logical connection's current
// target: always without the split.
func (l *logicalConn) fits(p *physical.Conn) bool {
	return !l.m.split.on || l.want.Accepts(l.m.table.Role(p.Node().TN()))
}

// txTarget is where a transaction goes: a read-only one (BeginTx with ReadOnly) may run on a
// replica, as the application asked; any other on the primary.
func (m *Mode) txTarget(ctx context.Context, opts driver.TxOptions) role.Target {
	if !m.split.on {
		return m.cfg.Target
	}
	if opts.ReadOnly {
		return readTarget
	}
	return writeTarget
}

// countRouted counts a statement of the split on the node it runs on: a read when it was
// routed as one (to any node), a write otherwise.
func (m *Mode) countRouted(p *physical.Conn, write bool) {
	if !m.split.on || p == nil {
		return
	}
	m.cfg.CountRouted(p.Node(), write)
}

// RYWReads returns how many reads read-your-writes sent to the primary.
func (m *Mode) RYWReads() uint64 { return m.split.rywReads.Load() }
