package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
)

// statementMode is what statement mode adds to a Connector: the count of logical connections
// database/sql holds, and the prepared statements they share. The physical connections
// themselves stay on their nodes (node.free for idle ones), counted and retired exactly as in
// connection mode.
type statementMode struct {
	logical  atomic.Int64                     // open logical connections
	checker  atomic.Value                     // driver.NamedValueChecker: go-sql-driver's argument rules, from the first logical connection's dial
	trimMu   sync.Mutex                       // one trim at a time, so two returns never close the same surplus twice
	views    []nodetable.View[*physical.Node] // trim's scratch copy of the node table; guarded by trimMu
	prepared preparedSet
}

// connectLogical opens a logical connection. Physical connections follow the logical count:
// when there are fewer physical connections than logical ones, one is dialed now (on the node
// with the fewest open connections) and parked, so connect errors surface here as in
// connection mode and the first statement finds an idle physical connection.
func (c *Connector) connectLogical(ctx context.Context) (driver.Conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	want := c.stmt.logical.Add(1)
	if c.table.Total() < want {
		p, err := c.connectPhysical(ctx)
		if err != nil {
			c.stmt.logical.Add(-1)
			return nil, err
		}
		// go-sql-driver's argument rules do not depend on the connection: keep the first one's.
		c.stmt.checker.CompareAndSwap(nil, driver.NamedValueChecker(p.Driver()))
		if !p.Park() {
			p.Close() // its node went down during the dial
		} else {
			c.parkFree(p)
		}
	}
	return &logicalConn{c: c}, nil
}

// borrow claims a physical connection for a logical one: an idle one on the up node with the
// fewest physical connections in use, else a new one dialed there; when that dial fails, the
// next least busy node. The node's in-use count is charged; giveBack or park returns it.
func (c *Connector) borrow(ctx context.Context, target role.Target) (*physical.Conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	first := c.table.PickInUseFor(target, nil)
	if first != nil {
		if p := c.takeFree(ctx, first.Payload()); p != nil {
			return p, nil
		}
	}
	next := func(tried []*tableNode) *tableNode {
		if n := first; n != nil { // already claimed: dial there before trying any other node
			first = nil
			return n
		}
		return c.table.PickInUseFor(target, tried)
	}
	p, err := c.tryNodes(ctx, next, c.table.PanicPickInUse, func(n *physical.Node, panicDial bool) (*physical.Conn, error) {
		if p := c.takeFree(ctx, n); p != nil {
			return p, nil
		}
		c.table.Charge(n.TN())
		p, err := c.connectNode(ctx, n, panicDial)
		if err == nil && !c.table.IsUp(n.TN()) {
			p.Close() // not handed out, as a checkout would not hand it out (conn.enter)
			err = errClosedWhileDialing
		}
		if err == nil && !p.ClaimFresh() {
			err = errClosedWhileDialing // its node went down or was drained meanwhile
		}
		if err != nil {
			c.table.Unclaim(n.TN())
			return nil, err
		}
		return p, nil
	})
	if first != nil { // tryNodes gave up before dialing (Close)
		c.table.Unclaim(first)
	}
	return p, err
}

// errClosedWhileDialing: lbd closed a new physical connection before its first use, because
// its node went down or started draining during the dial; the next node is tried.
var errClosedWhileDialing = errors.New("lbd: the new connection was closed before use: its node went down during the dial")

// takeFree claims an idle physical connection of n that passes go-sql-driver's liveness check
// (the one database/sql runs at checkout in connection mode). One that died while idle is
// closed quietly: it says nothing about the node now. While n is not up, none is handed out
// (as enter rules in connection mode): each one taken is closed.
func (c *Connector) takeFree(ctx context.Context, n *physical.Node) *physical.Conn {
	for {
		p := n.PopFree()
		if p == nil {
			return nil
		}
		if !p.Usable(ctx) {
			p.Close()
			continue
		}
		c.sweepStatements(p)
		return p
	}
}

// giveBack ends a claim on a physical connection: a healthy one is parked idle on its node for
// the next logical connection, a retired or broken one is closed. Physical connections above
// what the logical ones need are then closed.
func (c *Connector) giveBack(p *physical.Conn) {
	c.table.Unclaim(p.Node().TN())
	if !p.IsValid() || c.closed.Load() {
		p.Close()
		return
	}
	c.parkFree(p)
}

// parkFree puts an idle physical connection on its node's free list.
func (c *Connector) parkFree(p *physical.Conn) {
	p.Node().PushFree(p)
	if c.closed.Load() { // Close may have emptied the lists just before the push
		c.closeParked()
		return
	}
	c.trim()
}

// trim closes idle physical connections while there are more than the logical connections
// need: one per logical connection plus one spare per up node but one, so that the least busy
// node usually has an idle connection and a statement does not wait for a dial. Surplus goes
// from the node with the most open connections, longest idle first, which also evens the
// nodes out.
func (c *Connector) trim() {
	if !c.stmt.trimMu.TryLock() {
		return
	}
	defer c.stmt.trimMu.Unlock()
	for c.table.Total() > c.physicalTarget() {
		n := c.fullestWithFree()
		if n == nil {
			return
		}
		if p := n.PopOldestFree(); p != nil {
			p.ClosePhysical()
		}
	}
}

// physicalTarget is how many physical connections statement mode keeps open: none when
// database/sql holds no logical connection (SetMaxIdleConns(0) means no idle connection).
func (c *Connector) physicalTarget() int64 {
	logical := c.stmt.logical.Load()
	if logical <= 0 {
		return 0
	}
	return logical + max(int64(c.table.Ups())-1, 0)
}

// fullestWithFree returns the node with the most open physical connections among those with an
// idle one, or nil. The caller holds trimMu, which guards the scratch views.
func (c *Connector) fullestWithFree() *physical.Node {
	c.stmt.views = c.table.Snapshot(c.stmt.views[:0])
	defer clear(c.stmt.views) // drop node handles until the next trim
	var best *physical.Node
	bestOpen := 0
	for _, v := range c.stmt.views {
		if n := v.Node.Payload(); (best == nil || v.Open > bestOpen) && n.FreeCount() > 0 {
			best, bestOpen = n, v.Open
		}
	}
	return best
}

// closeParked closes every idle physical connection (at Close: database/sql closes the logical
// connections, and lbd the physical ones they leave).
func (c *Connector) closeParked() {
	for _, tn := range c.table.Nodes(nil) {
		n := tn.Payload()
		for p := n.PopOldestFree(); p != nil; p = n.PopOldestFree() {
			p.ClosePhysical()
		}
	}
}
