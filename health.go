package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/detect"
	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
)

// probeQuery is the health check lb-driver sends; the comment lets proxies and the server's
// logs tell probes from application traffic.
const probeQuery = "/* ping */ SELECT 1"

// probeTarget is one node as the prober sees it. A node gets a new one each time probing
// starts (a node removed and listed again), so an old probe goroutine that is still finishing
// never shares the probe connection with the new one.
type probeTarget struct {
	owner *Connector
	n     *node
	conn  driver.Conn      // the dedicated probe connection; owned by the prober's goroutine
	sock  *physical.Socket // its socket

	// confirm is the deadline, in nanoseconds, of the next probe when a passive signal asked
	// for it (0: a scheduled probe); confirming tells Report that the probe just run was one.
	// The prober runs Probe and Report on one goroutine, which alone touches confirming.
	confirm    atomic.Int64
	confirming bool

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

// errConfirmDeadline ends a running probe that a confirmation turned into a confirming one, once
// the confirmation's deadline has passed.
var errConfirmDeadline = errors.New("lbd: probe not answered within the confirming deadline")

// confirmRunning turns the scheduled probe in flight, if any, into the confirming probe: it now
// ends at most d after it began, and its result confirms or clears the suspicion. It reports
// whether there was one.
func (p *probeTarget) confirmRunning(d time.Duration) bool {
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

// Probe implements detect.Target: it runs probeQuery on the node's dedicated probe connection,
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
func (p *probeTarget) Probe(ctx context.Context) error {
	p.confirming = false
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
	lost, err := p.probeOnce(ctx)
	if reused && lost && ctx.Err() == nil {
		_, err = p.probeOnce(ctx)
	}
	return err
}

// probeOnce runs one probe on the probe connection, dialing it when there is none. lost
// reports a failure of the connection itself within the deadline, one a fresh connection may
// not have.
func (p *probeTarget) probeOnce(ctx context.Context) (lost bool, err error) {
	if p.conn == nil {
		pc, sock, err := physical.Connect(ctx, p.n.phys, false) // uncounted: probes are not application load
		if err != nil && sock != nil {
			sock.Close()
		}
		if exception.SameOnEveryNode(err) {
			return false, nil // the proxy is alive and answering; Connect reports the error to the caller
		}
		if err != nil {
			return false, err
		}
		p.conn, p.sock = pc, sock
	}
	bound := p.sock.LimitTo(ctx)
	err = p.query(ctx)
	if late := bound.Lift(); err != nil || late {
		lost = !late && connectionLost(err)
		switch {
		case err != nil && late:
			err = fmt.Errorf("lbd: probe not answered in time: %w", err)
		case late:
			err = errors.New("lbd: probe not answered in time")
		}
		p.Close() // a connection whose deadline passed mid-probe cannot be used again
	}
	return lost, err
}

// connectionLost reports whether err says the probe connection itself broke (go-sql-driver's
// invalid connection, driver.ErrBadConn, EOF, reset, broken pipe, aborted, closed) rather than
// the proxy answering wrongly: a protocol violation (ErrProtocol, a framing error), an error
// the proxy sent, or a timeout are about the node and are not.
func connectionLost(err error) bool {
	if errors.Is(err, ErrProtocol) {
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
func (p *probeTarget) query(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = physical.ProtocolError(p.n.addr, fmt.Errorf("go-sql-driver could not parse its answer to the probe: %v", r))
		}
	}()
	err = runProbeQuery(ctx, p.conn)
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
	return err
}

// Close implements detect.Target: it closes the probe connection, the socket first so that
// go-sql-driver's goodbye cannot wait on a proxy that stopped reading.
func (p *probeTarget) Close() error {
	if p.conn == nil {
		return nil
	}
	p.sock.Limit(time.Now().Add(physical.QuitTimeout))
	physical.CloseQuietly(p.conn)
	p.sock.Close()
	p.conn, p.sock = nil, nil
	return nil
}

// startProbing gives n a fresh probe target and hands it to the prober.
// With a role check, the first probe runs at once: until it answers, no node has a role a
// target other than any accepts.
func (c *Connector) startProbing(n *node) {
	t := &probeTarget{owner: c, n: n}
	n.probe.Store(t)
	c.prober.Add(t)
	if c.roles.check.Query() != "" {
		c.prober.Trigger(t)
	}
}

// triggerProbe asks for an early probe of n (coalesced by the prober).
func (c *Connector) triggerProbe(n *node) {
	if t := n.probe.Load(); t != nil && c.prober != nil {
		c.prober.Trigger(t)
	}
}

func runProbeQuery(ctx context.Context, pc driver.Conn) error {
	q, ok := pc.(driver.QueryerContext)
	if !ok {
		return fmt.Errorf("lbd: probe connection %T cannot run queries", pc)
	}
	rows, err := q.QueryContext(ctx, probeQuery, nil)
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
		return fmt.Errorf("lbd: probe answered %v, want 1", dest[0])
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

// startLoops starts the prober, the rebalancer and, with logStats, the stats logger.
func (c *Connector) startLoops() error {
	var err error
	c.prober, err = detect.NewProber(detect.ProberConfig{
		Interval: c.cfg.CheckHealthInterval,
		Timeout:  c.cfg.CheckHealthTimeout,
		Clock:    c.cfg.clock,
		Jitter:   c.cfg.jitter,
		Report: func(t detect.Target, err error, took time.Duration) {
			pt := t.(*probeTarget)
			if pt.confirming {
				c.table.Confirmed(pt.n.tn, c.cfg.clock.Now(), err, took)
			} else {
				c.table.Probed(pt.n.tn, c.cfg.clock.Now(), err, took)
			}
			c.observeProbe(pt.n.addr, took, err)
		},
	})
	if err != nil {
		return fmt.Errorf("lbd: %w", err)
	}
	c.rebal, err = detect.NewRebalancer(&rebalanceCluster{c: c}, detect.RebalancerConfig{
		Interval: c.cfg.CheckBalanceInterval,
		Clock:    c.cfg.clock,
		Report:   c.logRebalance,
	})
	if err != nil {
		c.prober.Close()
		return fmt.Errorf("lbd: %w", err)
	}
	for _, tn := range c.table.Nodes(nil) {
		c.startProbing(at(tn))
	}
	c.rebal.Start()
	c.loops.Add(1)
	go c.transitionLoop()
	if c.table.WarmupStep() > 0 {
		c.loops.Add(1)
		go c.warmupLoop()
	}
	c.loops.Add(1)
	go c.watchStalls()
	if c.cfg.LogStats {
		c.loops.Add(1)
		go c.logStatsLoop()
	}
	return nil
}

// onTransition reacts to a node state change, on transitionLoop's goroutine, in the order the
// table made the changes: it is logged once, a down node's idle connections close at once (so
// no stale connection is handed out after it recovers) and its in-use ones at their next
// return; a draining node stops being probed. Checkouts do not wait for it: from the moment
// the table shows a node not up, a checkout of its connections answers driver.ErrBadConn.
func (c *Connector) onTransition(t nodetable.Transition[*physical.Node]) {
	n := at(t.Node)
	if t.Forgot {
		c.cfg.Logger.Info("lbd: node drained and removed", "node", n.addr)
		return
	}
	if t.Cause == nodetable.CauseRole {
		c.onRoleChange(n, t)
		return
	}
	if t.To == nodetable.Up {
		c.topo.changed()
	}
	level := slog.LevelInfo
	if t.To != nodetable.Up {
		level = slog.LevelWarn
	}
	c.cfg.Logger.Log(context.Background(), level, "lbd: node state changed",
		"node", n.addr, "from", t.From.String(), "to", t.To.String(), "cause", t.Cause.String(), "reason", t.Reason)
	switch t.To {
	case nodetable.Down:
		n.phys.RetireBefore(physical.NodeDown, t.Seq)
		if t.Cause != nodetable.CauseProbe {
			c.triggerProbe(n)
		}
	case nodetable.Draining:
		n.phys.RetireBefore(physical.NodeDraining, t.Seq)
		if t := n.probe.Swap(nil); t != nil && c.prober != nil {
			c.prober.Remove(t)
		}
	}
}

// rebalanceCluster shows the connector to the rebalancer.
type rebalanceCluster struct {
	c     *Connector
	mu    sync.Mutex                       // guards views between rounds
	views []nodetable.View[*physical.Node] // reused from round to round
}

// Loads implements detect.Cluster over the up nodes.
func (p *rebalanceCluster) Loads(buf []detect.Load) []detect.Load {
	p.mu.Lock()
	p.views = p.c.table.Snapshot(p.views[:0])
	start := len(buf)
	for _, v := range p.views {
		if v.State == nodetable.Up {
			buf = append(buf, detect.Load{Node: v.Node.Payload(), Open: v.Open, Weight: v.Effective})
		}
	}
	clear(p.views) // drop node handles until the next round
	p.mu.Unlock()
	for i := start; i < len(buf); i++ {
		idle, retiring := buf[i].Node.(*physical.Node).ConnCounts()
		buf[i].Idle = idle
		buf[i].Open -= retiring // already on their way out; do not retire them twice
	}
	return buf
}

// Retire implements detect.Cluster.
func (p *rebalanceCluster) Retire(n any, max int) int {
	return n.(*physical.Node).RetireSurplus(max)
}

func (c *Connector) logRebalance(retired []detect.Retired) {
	for _, r := range retired {
		c.cfg.Logger.Info("lbd: rebalanced", "node", r.Node.(*physical.Node).Addr(), "retired", r.Count)
	}
}
