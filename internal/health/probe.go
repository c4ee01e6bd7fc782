package health

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// ProbeQuery is the health check lb-driver sends; the comment lets proxies and the server's
// logs tell probes from application traffic.
const ProbeQuery = "/* ping */ SELECT 1"

// nodeProbe is one node as the prober sees it. A node gets a new one each time probing
// starts (a node removed and listed again), so an old period of probing that is still
// finishing never shares the probe connection with the new one.
type nodeProbe struct {
	m    *Monitor
	n    *Node
	conn driver.Conn      // the dedicated probe connection; touched only by Probe and Close, which never overlap
	sock *physical.Socket // its socket

	// confirm is the deadline, in nanoseconds, of the next probe when a passive signal asked
	// for it (0: a scheduled probe); confirming tells Report that the probe just run was one.
	// The prober runs Probe, Report and NextProbeIn of one probe in turn on one worker, and
	// the probes of a node never overlap: they alone touch confirming.
	confirm    atomic.Int64
	confirming bool
	// good is the last probe's verdict, for NextProbeIn; only Report and NextProbeIn touch
	// it, in turn.
	good bool
	// What Probe tells Report about the probe just run (they run in turn): timedOut, it
	// failed because its deadline passed (the prober's timeout, a confirming deadline, or
	// the recovery deadline); landed, the node's answered statements (Flight.Landed) when it
	// began.
	timedOut bool
	landed   uint64
	// slow: the probe failed only because the node, down, answered its query later than
	// recoveryDeadline; it is alive, and NextProbeIn probes it again as soon as after a good
	// probe.
	slow bool

	// running is the scheduled probe in flight, nil when none: a confirmation asked for while
	// it runs turns it into the confirming probe (confirmRunning), so that a probe which began
	// just as the node hung cannot hold the verdict back for its whole timeout.
	runMu   sync.Mutex
	running *runningProbe
}

// runningProbe is one scheduled probe in flight.
type runningProbe struct {
	start    time.Time
	cancel   context.CancelCauseFunc
	upgraded bool // a confirmation was asked for while it ran: its verdict confirms
	timer    *time.Timer
}

// Recovery in about a second. A node that is down is probed on a schedule of its own, not
// every checkHealthInterval: after a good probe the next comes recoverySpacing later, and
// recoverCheckCount good probes that far apart bring it back (nodetable's RecoverSpacing); after
// a failed one the wait grows with the time the node has been down, from recoverySpacing by a
// second per 20 s, up to the probe interval, so a node that stays dead costs few dials. A proxy
// back from an outage of ten seconds is probed within about 0.75 s and is up about 0.25 s
// later. A node that answered, but too slowly to count (recoveryDeadline), is alive: it is
// probed again recoverySpacing later, so that it is back within about 0.65 s of answering fast
// again however long it was slow. Probes bring a node up at most once per FlapWindow: a proxy
// that passes probes but keeps failing the application's statements (fatal errors, passive
// signals) cannot go up, down and up again within it.
const (
	recoverySpacingMax = 250 * time.Millisecond
	recoveryGrowth     = 20 // the wait after a failed probe grows by 1/recoveryGrowth of the time down
	FlapWindow         = time.Second
)

// RecoverySpacing is the least time between good probes that count toward a recovery:
// recoverySpacingMax, or half the probe interval when that is shorter.
func RecoverySpacing(probeInterval time.Duration) time.Duration {
	return min(recoverySpacingMax, probeInterval/2)
}

// NextProbeIn implements detect.Pacer: an up node is probed every checkHealthInterval, a down
// one on the recovery schedule above.
func (p *nodeProbe) NextProbeIn() time.Duration {
	m, n := p.m, p.n
	if m.table.StateNow(n.tn) != nodetable.Down {
		return 0
	}
	spacing := RecoverySpacing(m.cfg.Interval)
	if p.good || p.slow {
		return spacing
	}
	down := m.cfg.Clock.Now().Sub(time.Unix(0, n.downAt.Load()))
	return min(m.cfg.Interval, spacing+max(down, 0)/recoveryGrowth)
}

// errConfirmDeadline ends a running probe that a confirmation turned into a confirming one, once
// the confirmation's deadline has passed.
var errConfirmDeadline = errors.New("lbd: probe not answered within the confirming deadline")

// confirmRunning turns the scheduled probe in flight, if any, into the confirming probe: it now
// ends at most d after it began, and its result confirms or clears the suspicion. It reports
// whether there was one.
func (p *nodeProbe) confirmRunning(d time.Duration) bool {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	r := p.running
	if r == nil || r.upgraded {
		return r != nil
	}
	r.upgraded = true
	r.timer = time.AfterFunc(max(time.Until(r.start.Add(d)), 0), func() { r.cancel(errConfirmDeadline) })
	return true
}

// Probe implements detect.Target: it runs ProbeQuery on the node's dedicated probe connection,
// dialing it first when needed. The probe connection is not counted as application load. A
// failure closes it so the next probe starts afresh. A proxy that answers anything but one row
// holding 1 fails the probe.
//
// The verdict is about the node, not one socket: when a probe connection kept from an earlier
// probe turns out to be lost (reset, closed, broken pipe; see connectionLost), the probe is
// run once more, at once, on a fresh connection within the same ctx. Only a failure to dial,
// greet or answer in time, a protocol violation, or a lost connection that was just dialled
// fails the probe.
//
// The whole probe, rows included, is bounded by ctx: every read and write of the probe
// connection carries ctx's deadline and fails at once when ctx ends, so a proxy that stalls
// mid-result cannot hold the prober (or Close) beyond the probe timeout.
//
// A confirming probe (see suspect) runs under the shorter deadline the signal set.
//
// A dial that never reached the node because its credentials failed (physical.ErrNoCredentials) fails
// the probe with that error, which Report takes for no verdict on the node.
func (p *nodeProbe) Probe(ctx context.Context) error {
	p.confirming, p.timedOut, p.slow = false, false, false
	p.landed = p.n.phys.Flight.Landed.Load()
	if d := time.Duration(p.confirm.Swap(0)); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
		p.confirming = true
	} else {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		r := &runningProbe{start: time.Now(), cancel: cancel}
		p.runMu.Lock()
		p.running = r
		p.runMu.Unlock()
		defer func() {
			p.runMu.Lock()
			p.running = nil
			if r.timer != nil {
				r.timer.Stop()
			}
			p.confirming = r.upgraded
			p.runMu.Unlock()
			cancel(nil)
		}()
	}
	reused := p.conn != nil
	lost, late, err := p.probeOnce(ctx)
	if reused && lost && ctx.Err() == nil {
		_, late, err = p.probeOnce(ctx)
	}
	p.timedOut = err != nil && (late || CallerGaveUp(ctx))
	return err
}

// recoveryDeadline is how long a probe of a node that is down may take to answer ProbeQuery:
// the confirming deadline (the stall threshold, at least confirmFloor), the time within which
// an up node's confirming probe must answer for it to stay up. A node that answers its probes
// but more slowly than that (a proxy taking a second per statement) would be taken out again
// by the stall rule as soon as it came back: such a probe is not a good one, and the node
// stays down without flapping; once it answers fast again, it is back after recoverCheckCount
// good probes, whatever it took while slow. Only the probe query is bounded so: the dial and
// the role and lag checks keep the probe timeout. 0 for a node that is not down.
func (p *nodeProbe) recoveryDeadline() time.Duration {
	if p.m.table.StateNow(p.n.tn) != nodetable.Down {
		return 0
	}
	return max(time.Duration(p.m.stallBase.Load()), confirmFloor)
}

// probeOnce runs one probe on the probe connection, dialing it when there is none. lost
// reports a failure of the connection itself within the deadline, one a fresh connection may
// not have; late, a failure because a deadline passed.
func (p *nodeProbe) probeOnce(ctx context.Context) (lost, late bool, err error) {
	if p.conn == nil {
		p.n.probeConns.Add(1)                                   // from the dial on, as Open counts the application's dials
		pc, sock, err := physical.Connect(ctx, p.n.phys, false) // uncounted: probes are not application load
		if err != nil {
			p.n.probeConns.Add(-1)
			if sock != nil {
				sock.Close()
			}
		}
		if exception.SameOnEveryNode(err) {
			return false, false, nil // the proxy is alive and answering; Connect reports the error to the caller
		}
		if err != nil {
			return false, CallerGaveUp(ctx), err
		}
		p.conn, p.sock = physical.BoundConn(pc), sock // its errors bounded, as a Conn's are
	}
	bound := p.sock.LimitTo(ctx)
	var slow bool
	slow, err = p.query(ctx)
	// The socket's deadline is ctx's, and may pass a moment before ctx itself ends: a
	// failure then is the deadline's all the same.
	if late = bound.Lift() || err != nil && CallerGaveUp(ctx); err != nil || late {
		lost = !late && !slow && connectionLost(err)
		p.slow = slow && !late
		late = late || slow
		switch {
		case p.slow:
			// err says how slow
		case err != nil && late:
			err = fmt.Errorf("lbd: probe not answered in time: %w", err)
		case late:
			err = errors.New("lbd: probe not answered in time")
		}
		p.Close() // a connection whose deadline passed mid-probe cannot be used again
	}
	return lost, late, err
}

// connectionLost reports whether err says the probe connection itself broke (go-sql-driver's
// invalid connection, driver.ErrBadConn, EOF, reset, broken pipe, aborted, closed) rather than
// the proxy answering wrongly: a protocol violation (ErrProtocol, a framing error), an error
// the proxy sent, or a timeout are about the node and are not.
func connectionLost(err error) bool {
	if errors.Is(err, physical.ErrProtocol) {
		return false
	}
	switch _, reason := exception.Classify(err); reason {
	case exception.ReasonInvalidConn, exception.ReasonBadConn, exception.ReasonEOF, exception.ReasonConnClosed,
		exception.ReasonConnReset, exception.ReasonBrokenPipe, exception.ReasonConnAborted:
		return true
	}
	return false
}

// query runs the probe query, then the role and lag checks when configured, turning a panic
// of go-sql-driver's parser in any of them into an error.
//
// A node that is down must answer the probe query within recoveryDeadline: slow reports that
// it did not (err then says so, and the connection is unusable).
func (p *nodeProbe) query(ctx context.Context) (slow bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = physical.ProtocolError(p.n.Addr(), fmt.Errorf("go-sql-driver could not parse its answer to the probe: %v", r))
		}
	}()
	if d := p.recoveryDeadline(); d > 0 {
		qctx, cancel := context.WithTimeout(ctx, d)
		bound := p.sock.LimitTo(qctx)
		err = runProbeQuery(qctx, p.conn)
		slow = bound.Lift()
		cancel()
		if slow {
			return true, fmt.Errorf("lbd: probe not answered within %v (the stall threshold) while the node is down: it is still slow", d)
		}
		if dl, ok := ctx.Deadline(); ok {
			p.sock.Limit(dl) // the probe's own bound again (lifting the recovery deadline lifted it)
		}
	} else {
		err = runProbeQuery(ctx, p.conn)
	}
	if err == nil {
		err = p.checkStatus(ctx)
	}
	if err == nil {
		err = p.checkRole(ctx)
	}
	if err == nil {
		err = p.checkLag(ctx)
	}
	if err != nil {
		if perr := p.sock.ProtocolErr(); perr != nil {
			err = perr
		}
	}
	return false, err
}

// Close implements detect.Target: it closes the probe connection, the socket first so that
// go-sql-driver's goodbye cannot wait on a proxy that stopped reading.
func (p *nodeProbe) Close() error {
	if p.conn == nil {
		return nil
	}
	p.sock.Limit(time.Now().Add(physical.QuitTimeout))
	physical.CloseQuietly(p.conn)
	p.sock.Close()
	p.conn, p.sock = nil, nil
	p.n.probeConns.Add(-1)
	return nil
}

// startProbing gives n a fresh probe target and hands it to the prober.
// With a role check, the first probe runs at once: until it answers, no node has a role a
// target other than any accepts.
func (n *Node) startProbing() {
	m := n.m
	t := &nodeProbe{m: m, n: n}
	n.probe.Store(t)
	m.prober.Add(t)
	if m.cfg.Check.Query() != "" {
		m.prober.Trigger(t)
	}
}

// triggerProbe asks for an early probe of n (coalesced by the prober).
func (n *Node) triggerProbe() {
	if t := n.probe.Load(); t != nil && n.m.prober != nil {
		n.m.prober.Trigger(t)
	}
}

// earlyProbeSpacing is the least time between two probes of one node that the application's
// traffic brings forward (a fatal error, a failed or abandoned dial, a passive signal): a storm
// of such events runs about one probe a second on a node, not one per event. The first
// event of a storm probes at once, so a broken proxy is found as fast as before.
const earlyProbeSpacing = time.Second

// mayProbeEarly reports whether the traffic may bring n's probe forward now, and if so takes
// the turn: no other such probe of n for earlyProbeSpacing.
func (n *Node) mayProbeEarly() bool {
	now := n.m.cfg.Clock.Now().UnixNano()
	last := n.earlyProbe.Load()
	if last != 0 && now-last < int64(earlyProbeSpacing) {
		return false
	}
	return n.earlyProbe.CompareAndSwap(last, now)
}

// probeForTraffic is triggerProbe for what the application's traffic saw, spaced by
// earlyProbeSpacing.
func (n *Node) probeForTraffic() {
	if n.mayProbeEarly() {
		n.triggerProbe()
	}
}

func runProbeQuery(ctx context.Context, pc driver.Conn) error {
	q, ok := pc.(driver.QueryerContext)
	if !ok {
		return fmt.Errorf("lbd: probe connection %T cannot run queries", pc)
	}
	rows, err := q.QueryContext(ctx, ProbeQuery, nil)
	if err != nil {
		return err
	}
	if err := checkProbeRows(rows); err != nil {
		rows.Close()
		return err
	}
	// The whole answer must arrive: a proxy that stalls after the row is not healthy.
	if err := rows.Close(); err != nil {
		return fmt.Errorf("lbd: probe answer did not end: %w", err)
	}
	return nil
}

// checkProbeRows requires exactly one row of one column holding 1.
func checkProbeRows(rows driver.Rows) error {
	if cols := rows.Columns(); len(cols) != 1 {
		return fmt.Errorf("lbd: probe answered %d columns, want 1", len(cols))
	}
	dest := make([]driver.Value, 1)
	if err := rows.Next(dest); err != nil {
		return fmt.Errorf("lbd: probe answered no row: %w", err)
	}
	if !isOne(dest[0]) {
		return fmt.Errorf("lbd: probe answered %s, want 1", probeValue(dest[0]))
	}
	switch err := rows.Next(dest); err {
	case io.EOF:
		return nil
	case nil:
		return errors.New("lbd: probe answered more than one row, want 1")
	default:
		return fmt.Errorf("lbd: probe answer did not end: %w", err)
	}
}

// probeValue is a wrong answer to the probe as its error shows it: text quoted and clipped
// (the value is the proxy's), anything else by its type.
func probeValue(v driver.Value) string {
	switch x := v.(type) {
	case []byte:
		return strconv.Quote(clipValue(string(x[:min(len(x), 64)])))
	case string:
		return strconv.Quote(clipValue(x))
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return "NULL"
	}
	return fmt.Sprintf("a %T", v)
}

// isOne accepts 1 in the shapes a text or binary result can carry.
func isOne(v driver.Value) bool {
	switch x := v.(type) {
	case int64:
		return x == 1
	case []byte:
		return string(x) == "1"
	case string:
		return x == "1"
	}
	return false
}

// Replica lag (maxReplicationLagSeconds): with it set, the probe of a node whose role is replica
// also reads how far the replica is behind its primary, from the server where it tells: MySQL's
// and MariaDB's SHOW REPLICA STATUS (SHOW SLAVE STATUS before MySQL 8.0.22 and MariaDB 10.5),
// column Seconds_Behind_Source (Seconds_Behind_Master). A replica further behind than allowed,
// or whose replication is stopped (NULL), takes no new connection and no read until it catches
// up; with every replica out, reads go to the primary, so they never fail because replicas are
// out. The check needs the REPLICATION CLIENT (MySQL) or SLAVE MONITOR (MariaDB) privilege; when
// it fails, the replica keeps serving and RoleError says why.

// replicaLag reads the replica's lag on pc: known is false when the server says its replication
// is not running (NULL), and err says when the statement failed or no replication is configured.
func replicaLag(ctx context.Context, pc driver.Conn) (lag time.Duration, known bool, err error) {
	q, ok := pc.(driver.QueryerContext)
	if !ok {
		return 0, false, fmt.Errorf("lbd: connection %T cannot run queries", pc)
	}
	rows, err := q.QueryContext(ctx, "SHOW REPLICA STATUS", nil)
	if err != nil {
		rows, err = q.QueryContext(ctx, "SHOW SLAVE STATUS", nil) // before MySQL 8.0.22 and MariaDB 10.5
	}
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	col := -1
	for i, name := range rows.Columns() {
		if name == "Seconds_Behind_Source" || name == "Seconds_Behind_Master" {
			col = i
		}
	}
	if col < 0 {
		return 0, false, errors.New("the replica status has no Seconds_Behind_Source column")
	}
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			return 0, false, errors.New("the server reports no replication: not a replica")
		}
		return 0, false, err
	}
	var text string
	switch v := dest[col].(type) {
	case nil:
		return 0, false, nil
	case []byte:
		text = string(v)
	case string:
		text = v
	case int64:
		text = strconv.FormatInt(v, 10)
	case uint64: // go-sql-driver reads the unsigned column as such
		text = strconv.FormatUint(v, 10)
	default:
		return 0, false, fmt.Errorf("Seconds_Behind_Source is a %T", v)
	}
	secs, perr := strconv.ParseUint(text, 10, 32)
	if perr != nil {
		return 0, false, fmt.Errorf("Seconds_Behind_Source is %q", clipValue(text))
	}
	return time.Duration(secs) * time.Second, true, nil
}

// clipValue is a value a proxy answered, as an error quotes it: at most 35 bytes, a fresh copy
// that keeps nothing longer alive.
func clipValue(s string) string { return physical.ClipText(s, 35) }

// checkLag runs on the probe connection after the role check: a replica's lag decides whether
// it takes reads. A failed lag check does not fail the probe.
func (p *nodeProbe) checkLag(ctx context.Context) error {
	m := p.m
	max := m.cfg.MaxReplicationLag
	if max <= 0 {
		return nil
	}
	tn := p.n.tn
	if m.table.Role(tn) != nodes.RoleReplica {
		if m.table.SetLagging(tn, false) {
			m.cfg.Logger.Info("lbd: replica lag no longer checked", "node", p.n.Addr(), "reason", "not a replica now")
		}
		return nil
	}
	lag, known, err := replicaLag(ctx, p.conn)
	if err != nil {
		if connectionLost(err) || errors.Is(err, physical.ErrProtocol) || ctx.Err() != nil {
			return err
		}
		err = fmt.Errorf("lbd: replica lag check: %w", err)
		p.n.roleErr.Store(&err)
		return nil
	}
	p.n.lag.Store(int64(lag))
	m.table.NoteLag(tn, lag, known)
	lagging := !known || lag > max
	if m.table.SetLagging(tn, lagging) {
		if lagging {
			m.cfg.Logger.Warn("lbd: replica lagging; it takes no reads until it catches up, unless minServingReplicas keeps it", "node", p.n.Addr(),
				"lag", lagDesc(lag, known), "max", max)
		} else {
			m.cfg.Logger.Info("lbd: replica caught up; it takes reads again", "node", p.n.Addr(), "lag", lag)
		}
	}
	return nil
}

func lagDesc(lag time.Duration, known bool) string {
	if !known {
		return "replication stopped"
	}
	return lag.String()
}

// checkRole runs the Connector's role check on the probe connection, after a good health
// query, and reports the role to the table. A server error (no privilege to read the role, a
// custom query that fails) or an answer it cannot read leaves the role as it was, is kept for
// the Connect errors that name the node, and does not fail the probe: the node answered its
// health query. A broken connection or a protocol violation does fail it.
func (p *nodeProbe) checkRole(ctx context.Context) error {
	check := p.m.cfg.Check
	if check.Query() == "" {
		return nil
	}
	var r nodes.Role
	var err, derr error
	if check.Status() {
		var vars map[string]string
		if vars, err = physical.NameValues(ctx, p.conn, check.Query(), role.MaxStatusRows); err == nil {
			r, derr = check.DecodeStatus(vars)
		}
	} else {
		var value string
		if value, err = physical.OneValue(ctx, p.conn, check.Query()); err == nil {
			r, derr = check.Decode(value)
		}
	}
	if err != nil {
		if connectionLost(err) || errors.Is(err, physical.ErrProtocol) || ctx.Err() != nil {
			return err
		}
		err = fmt.Errorf("lbd: role check %s: %w", check.Name(), err)
		p.n.roleErr.Store(&err)
		return nil
	}
	if derr != nil {
		err := fmt.Errorf("lbd: %w", derr)
		p.n.roleErr.Store(&err)
		return nil
	}
	p.n.roleErr.Store(nil)
	p.m.table.RoleChecked(p.n.tn, r, nil)
	return nil
}
