package logical

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/causal"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/nodes"
)

// Causal reads by GTID (readConsistency=gtid, with readWriteSplit): a write in a scope records
// the position it reached on the primary. Where the server tracks the session's GTIDs (session
// tracking, internal/physical's SessionState) the write's own OK packet reports it, and nothing
// is asked; elsewhere (a server or proxy without session tracking, Galera) lbd asks the same
// session right after the write (MariaDB @@last_gtid; MySQL @@global.gtid_executed, a superset;
// Galera WSREP_LAST_WRITTEN_GTID()): one more round trip per write. A later read of that scope
// bound to a replica runs there once the replica has applied that position: proven by an
// earlier wait on the same connection, or by a wait now (MASTER_GTID_WAIT,
// WAIT_FOR_EXECUTED_GTID_SET), for at most readAfterWriteMillis and for no longer than the
// replica lately took to catch up; otherwise it runs on the primary (awaitPosition). As MySQL
// Router's wait_for_my_writes, but the position belongs to the scope, not to one proxy's
// session, so it holds across every proxy. Reads of a scope that has written nothing wait for
// nothing, nor do reads bound to the primary, but on Galera (see awaitPosition).

// causalState is the split's GTID bookkeeping.
type causalState struct {
	on       bool
	flavor   atomic.Int32                    // -1 until the first capture told MariaDB from MySQL; then a causal.Flavor (Galera from the start with Config.CausalGalera)
	pos      atomic.Pointer[causal.Position] // the Connector-wide scope's position
	waits    atomic.Uint64
	waitTime atomic.Int64 // nanoseconds over all waits
	fallback atomic.Uint64
	captures atomic.Uint64
	reported atomic.Uint64 // of captures, positions the write's own answer reported
	known    atomic.Uint64 // reads whose connection had applied their position already
	// uncaptured is the Connector-wide scope's latest write whose position could not be read,
	// unix nanoseconds (see route).
	uncaptured atomic.Int64
	hint       causalHint // the Connector-wide scope's
}

// causalHint is what a scope's latest fallback found: its reads of the position pos go to the
// primary until until (Unix nanoseconds), because the replica a read bound was behind (its
// catch-up time, or a hold). A read of the scope then binds the primary at once, without
// claiming a replica connection first (primaryHinted); a write carries the hint over to its
// new position (renew). The fields are read apart; a mismatch sends a read to a replica that
// then falls back, or to the primary, either correct.
type causalHint struct {
	pos     atomic.Pointer[causal.Position]
	until   atomic.Int64
	catchUp atomic.Int64 // the catch-up time that set it, nanoseconds
	setAt   atomic.Int64 // when a read set it, Unix nanoseconds
}

// set makes the scope's reads of pos go to the primary until until, for a replica whose catch-up
// time is catchUp.
func (h *causalHint) set(pos *causal.Position, now time.Time, until int64, catchUp time.Duration) {
	h.until.Store(until)
	h.catchUp.Store(int64(catchUp))
	h.setAt.Store(now.UnixNano())
	h.pos.Store(pos)
}

// renew carries the hint over to the scope's new position pos, written at now: while reads go
// to the primary because the replica is behind, the read right after the next write need not
// try the replica either; the catch-up time that set the hint says for how long. A hint is
// carried over for a causalHold after a read set it, no longer: then a read asks the replica's
// catch-up time again (awaitPosition), which may have changed.
func (h *causalHint) renew(pos *causal.Position, now time.Time) {
	if c := h.catchUp.Load(); c > 0 && now.UnixNano()-h.setAt.Load() < int64(causalHold) {
		h.until.Store(now.Add(time.Duration(c)).UnixNano())
		h.pos.Store(pos)
	}
}

// hintOf returns the causal hint of the scope of ctx.
func (m *Mode) hintOf(ctx context.Context) *causalHint {
	if s, ok := ctx.Value(rywKey{}).(*rywScope); ok {
		return &s.hint
	}
	return &m.split.causal.hint
}

// primaryHinted reports whether a read of the scope of ctx goes to the primary without trying a
// replica (see causalHint); it counts as a fallback.
func (m *Mode) primaryHinted(ctx context.Context) bool {
	cs := &m.split.causal
	if !cs.on {
		return false
	}
	h := m.hintOf(ctx)
	pos := m.positionOf(ctx).Load()
	if pos == nil || h.pos.Load() != pos || m.cfg.Now().UnixNano() >= h.until.Load() {
		return false
	}
	cs.fallback.Add(1)
	return true
}

// uncapturedOf returns where the scope of ctx keeps the time of its latest write whose position
// could not be read.
func (m *Mode) uncapturedOf(ctx context.Context) *atomic.Int64 {
	if s, ok := ctx.Value(rywKey{}).(*rywScope); ok {
		return &s.uncaptured
	}
	return &m.split.causal.uncaptured
}

// positionOf returns where the scope of ctx keeps its position.
func (m *Mode) positionOf(ctx context.Context) *atomic.Pointer[causal.Position] {
	if s, ok := ctx.Value(rywKey{}).(*rywScope); ok {
		return &s.pos
	}
	return &m.split.causal.pos
}

// capture records the position the write that just ran on its physical connection p reached,
// and merges it into ctx's scope: the GTID the write's own answer reported when the server
// tracks them (see reported), or the answer to a question on the same session. A failure
// leaves the position as it was and sends the scope's reads to the primary for ReadAfterWrite
// (see route): a wait for the old position would not cover this write. The error is not the
// caller's: the write ran.
func (m *Mode) capture(ctx context.Context, p *physical.Conn) {
	cs := &m.split.causal
	f := causal.Flavor(cs.flavor.Load())
	if cs.flavor.Load() < 0 {
		f = causal.MariaDB
	}
	value, f, fromAnswer, err := m.reported(p, f)
	if !fromAnswer {
		// The capture runs on the write's own session even if the node lost its role since
		// the write (SessionValue): without it the scope's reads would not wait for this write.
		value, err = p.SessionValue(ctx, f.CaptureQuery())
		if me, ok := errors.AsType[*mysql.MySQLError](err); ok && cs.flavor.Load() < 0 && me.Number == 1193 {
			// No @@last_gtid: a MySQL server.
			f = causal.MySQL
			value, err = p.SessionValue(ctx, f.CaptureQuery())
		}
	}
	if err != nil {
		m.uncapturedOf(ctx).Store(m.cfg.Now().UnixNano())
		m.cfg.Logger.Debug("lbd: GTID capture failed; the scope's reads go to the primary for readAfterWriteMillis", "node", p.Node().Addr(), "err", err)
		return
	}
	cs.flavor.CompareAndSwap(-1, int32(f))
	pos, err := f.Parse(value)
	if errors.Is(err, causal.ErrTooLong) {
		// Too long to wait for: the scope's reads go to the primary, as when a merge
		// overflows, rather than to a replica that was never asked to catch up.
		pos, err = causal.Overflow(f), nil
	}
	if err != nil {
		if !errors.Is(err, causal.ErrNoPosition) {
			m.uncapturedOf(ctx).Store(m.cfg.Now().UnixNano())
			m.cfg.Logger.Warn("lbd: GTID capture answered an unreadable position", "node", p.Node().Addr(), "err", err)
		}
		return
	}
	cs.captures.Add(1)
	if fromAnswer {
		cs.reported.Add(1)
	}
	slot := m.positionOf(ctx)
	for {
		old := slot.Load()
		merged := pos
		if old != nil {
			merged = causal.Merge(*old, pos)
		}
		if slot.CompareAndSwap(old, &merged) {
			m.hintOf(ctx).renew(&merged, m.cfg.Now())
			if merged.Overflowed() && (old == nil || !old.Overflowed()) {
				m.cfg.Logger.Warn("lbd: a read-your-writes scope's GTID position spans more replication domains than a wait may carry; its reads go to the primary from now on",
					"max_domains", causal.MaxDomains, "node", p.Node().Addr())
			}
			return
		}
	}
}

// awaitPosition makes the read about to run on p, bound for a replica read, wait there for its
// scope's position, or binds it on the primary instead (rebind). It returns the connection to run
// the read on. A read bound to the primary waits only on Galera, where the writer can be another
// node than the one that took the scope's last write.
//
// A read needs no wait when an earlier wait on the same connection proved its server has the
// position already (physical.Conn.Applied; a connection's session stays on one server): between
// two writes of a scope, only its first read on each connection waits. For the others, what a
// wait costs is the replica's catching up, so lbd waits only where that is short and otherwise
// reads on the primary at once, as readConsistency=time would: plan (catchup.go) decides from
// what the node's earlier waits taught (physical.Replication), and a wait that does not reach
// the position sends the read to the primary too. Each is a fallback. On Galera every read waits
// for at most ReadAfterWrite, as the primary it would fall back to may be a new writer that has
// not applied the position either; once the node answers that it reached the position, a causal
// read there makes sure it has committed it too (causal.Flavor.SettleQuery), within that bound.
//
// No wait is longer than ReadAfterWrite: the server gives up after its limit, and lbd stops
// waiting for its answer causalWaitSlack later, so a replica that never answers costs at most
// that, not the caller's whole deadline. A wait cut that way leaves its physical connection
// closed, and rebind gives it back. A position too large to wait for (causal.MaxDomains) sends
// the read to the primary.
func (l *logicalConn) awaitPosition(ctx context.Context, p *physical.Conn, rebind func() (*physical.Conn, error)) (*physical.Conn, error) {
	m := l.m
	cs := &m.split.causal
	if !cs.on || !readRouted(l.want) {
		return p, nil
	}
	pos := m.positionOf(ctx).Load()
	if pos == nil || pos.IsZero() {
		return p, nil
	}
	node := p.Node()
	// A primary has applied every write it acknowledged, unless it is a Galera node: there the
	// writer moves (singleWriter) to a node that may not have applied the last writes of the
	// one before it yet, most of all one that was desynced, so a read waits there too.
	if m.table.Role(node.TN()) == nodes.RolePrimary && pos.Flavor() != causal.Galera {
		return p, nil
	}
	if causal.Covers(p.Applied, *pos) {
		cs.known.Add(1)
		return p, nil
	}
	rep := &node.Replication
	now := m.cfg.Now()
	age := time.Duration(now.UnixNano() - m.lastWriteOf(ctx).Load())
	wait, check, limit := !pos.Overflowed(), false, m.cfg.ReadAfterWrite
	if pos.Flavor() != causal.Galera { // on Galera the fallback, a writer too, would not wait
		wait, check, limit = plan(rep, now, age, m.cfg.ReadAfterWrite, pos.Overflowed())
	}
	if !wait {
		// Until the replica may have caught up, the scope's reads of this position need not try it.
		until, catchUp := rep.HeldUntil.Load(), time.Duration(rep.CatchUp.Load())
		if until == 0 && age < catchUp {
			until = now.Add(catchUp - age).UnixNano()
		}
		m.hintOf(ctx).set(pos, now, until, catchUp)
	}
	if wait {
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, limit+causalWaitSlack)
		answer, err := p.WaitValue(wctx, pos.WaitText(limit.Seconds()))
		reached := false
		if err == nil {
			reached, err = pos.Flavor().Reached(answer)
		}
		if q := pos.Flavor().SettleQuery(); reached && q != "" {
			// Galera: the node has assigned the position and may still be committing it.
			reached = false
			if answer, err = p.WaitValue(wctx, q); err == nil {
				reached, err = pos.Flavor().Reached(answer)
			}
		}
		cancel()
		// The waits leave nothing in the session, though a server may flag its state as
		// changed (MariaDB does for SET STATEMENT): what the logical connection carries on p
		// is as it was before them.
		l.mark = p.Session().Mark()
		took := time.Since(start)
		cs.waits.Add(1)
		cs.waitTime.Add(int64(took))
		switch {
		case err == nil && reached:
			p.Applied = causal.Merge(p.Applied, *pos)
			reachedAfter(rep, m.cfg.Now(), took, age, m.table.Latency(node.TN(), now), m.cfg.ReadAfterWrite, check)
			return p, nil
		case err == nil:
			missed(rep, m.cfg.Now(), took, age, m.cfg.ReadAfterWrite, check)
		default:
			unanswered(rep)
			if ctx.Err() != nil {
				return nil, err
			}
		}
	}
	cs.fallback.Add(1)
	l.want = writeTarget
	return rebind()
}

// reported returns the GTID position of the session of p, as the server reported it in the
// answers to its statements (session tracking, +0 round trips), with its flavor; fromAnswer is
// false when the server does not report GTIDs on p (no session tracking, the request refused,
// the session changed its tracking) or the flavor is Galera (whose writes are known by
// WSREP_LAST_WRITTEN_GTID()), and the position must be asked for. A write whose answer has not
// been read whole yet (a result still open) may have its GTID still to come: that is an error,
// as a failed question is.
func (m *Mode) reported(p *physical.Conn, f causal.Flavor) (value string, flavor causal.Flavor, fromAnswer bool, err error) {
	st := p.Session()
	if f == causal.Galera || !st.TracksGTIDs() {
		return "", f, false, nil
	}
	if !p.AnswerRead() {
		return "", f, true, errOpenAnswer
	}
	value, flavor = st.GTID()
	return value, flavor, true, nil
}

// errOpenAnswer: a write's position is wanted while its answer is still being read.
var errOpenAnswer = errors.New("the write's answer is still being read: its GTID may not have arrived yet")

// causalWaitSlack is how much longer than the wait it asked for lbd waits for a replica's
// answer to a GTID wait: room for one round trip on a busy network.
const causalWaitSlack = 50 * time.Millisecond

// CausalStats counts what readConsistency=gtid did; lbd.CausalStats documents it.
type CausalStats struct {
	Captures  uint64        // positions read after writes
	Reported  uint64        // of them, positions the write's own answer reported: nothing asked
	Waits     uint64        // reads that waited on a replica for their scope's position
	Known     uint64        // reads on a replica known to have applied their scope's position: no wait
	WaitTime  time.Duration // time spent in those waits, in all
	Fallbacks uint64        // reads sent to the primary because the replica did not catch up in time, or was behind (a held node)
}

// CausalStats returns what readConsistency=gtid did so far.
func (m *Mode) CausalStats() CausalStats {
	cs := &m.split.causal
	return CausalStats{Captures: cs.captures.Load(), Reported: cs.reported.Load(), Waits: cs.waits.Load(),
		Known: cs.known.Load(), WaitTime: time.Duration(cs.waitTime.Load()), Fallbacks: cs.fallback.Load()}
}

// captureAfter records the position of a write that just ran on p and left its position final:
// outside a transaction, or the statement that committed one begun by text (ran decides; a
// transaction begun with BeginTx is read at its Commit). A write answered with rows (INSERT or
// DELETE ... RETURNING sent through QueryContext) is read once rows are closed: while they are
// open the session takes no other command. Rows that are not lbd's cannot say when they close,
// so the scope's reads go to the primary for readAfterWriteMillis instead, as after a failed
// capture.
func (l *logicalConn) captureAfter(ctx context.Context, p *physical.Conn, rows driver.Rows) {
	if !l.m.split.causal.on || p == nil {
		return
	}
	if rows == nil {
		l.m.capture(ctx, p)
	} else if !physical.AfterClose(rows, func() { l.m.capture(ctx, p) }) {
		l.m.uncapturedOf(ctx).Store(l.m.cfg.Now().UnixNano())
	}
}
