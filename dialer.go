package lbd

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/wire"
)

func init() {
	// One process-wide registration serves every Connector: the node to dial and the counters
	// to charge travel in the dial context, so nothing is registered per Connector.
	mysql.RegisterDialContext(Network, dialContext)
}

// dialTicket carries one Connect attempt's node into the registered dial function. The node's
// open count was already raised by the pick; once the dial succeeds the tracked connection owns
// that count and gives it back when it closes.
type dialTicket struct {
	node  *node
	table *nodeTable   // nil for a probe connection, which is not counted
	conn  *trackedConn // set when the dial succeeded; a counted one owns the node's count from then on
}

type ticketKey struct{}

// errNoTicket is returned when the lb network is dialed by something other than an lbd
// Connector, e.g. sql.Open("mysql", "...@lb(...)/db").
var errNoTicket = errors.New(`lbd: the "lb" network can only be dialed through an lbd Connector (use lbd.Open, lbd.NewConnector or sql.Open("lbd", dsn))`)

// dialContext is the function registered with go-sql-driver for the lb network. addr is the
// single node chosen by the Connector (each node has its own go-sql-driver config).
func dialContext(ctx context.Context, addr string) (net.Conn, error) {
	t, ok := ctx.Value(ticketKey{}).(*dialTicket)
	if !ok || t.node.addr != addr {
		return nil, errNoTicket
	}
	var d net.Dialer // TCP keepalive on, at the net package's default period
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tcp, ok := nc.(*net.TCPConn)
	if !ok { // cannot happen for "tcp", but a nil embedded pointer would panic later
		nc.Close()
		return nil, errors.New("lbd: dial returned a non-TCP connection")
	}
	tc := &trackedConn{TCPConn: tcp, node: t.node, table: t.table}
	tc.guard.Init(wire.Limits{})
	t.conn = tc
	greeting, err := readGreeting(ctx, tcp)
	if err != nil {
		tc.Close()
		return nil, err
	}
	tc.pending = greeting
	return tc, nil
}

// trackedConn is a node's TCP connection that gives the node's open count back exactly once,
// however it closes (pool close, error, server reset). It embeds *net.TCPConn so keepalive
// settings and syscall.Conn stay reachable: go-sql-driver's liveness check at checkout needs
// SyscallConn.
//
// Every byte passes lbd's protocol guard (internal/wire) on its way, so a packet go-sql-driver
// cannot parse safely fails the read instead of reaching it. A bound set by lbd (a probe's
// timeout, a caller's context ending) caps every deadline go-sql-driver sets, so no read or
// write outlives it.
type trackedConn struct {
	*net.TCPConn
	node    *node
	table   *nodeTable // nil: not counted (probe connection)
	closed  atomic.Bool
	pending []byte // the server's greeting, read and checked by the dialer, handed over first

	guard wire.Guard   // used only by the goroutine reading and writing the connection
	bound atomic.Int64 // lbd's deadline for every read and write, in Unix nanoseconds; 0: none
}

// Read serves the checked greeting first, then the socket, through the guard.
func (c *trackedConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		if err := c.guard.Server(b[:n]); err != nil {
			return 0, err
		}
		c.pending = c.pending[n:]
		return n, nil
	}
	if err := c.guard.Err(); err != nil {
		return 0, err
	}
	n, err := c.TCPConn.Read(b)
	if gerr := c.guard.Server(b[:n]); gerr != nil {
		return 0, gerr
	}
	return n, err
}

// Write sends b and shows the guard what was sent: it follows the commands to know what answer
// to expect.
func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.TCPConn.Write(b)
	c.guard.Client(b[:n])
	return n, err
}

// protocolErr returns the guard's finding as an error naming the node, or nil.
func (c *trackedConn) protocolErr() error {
	if err := c.guard.Err(); err != nil {
		return protocolError(c.node.addr, err)
	}
	return nil
}

// SetDeadline implements net.Conn; lbd's bound, when set, wins over a later deadline.
func (c *trackedConn) SetDeadline(t time.Time) error {
	return c.setDeadline(t, c.TCPConn.SetDeadline)
}

// SetReadDeadline implements net.Conn; lbd's bound, when set, wins over a later deadline.
func (c *trackedConn) SetReadDeadline(t time.Time) error {
	return c.setDeadline(t, c.TCPConn.SetReadDeadline)
}

// SetWriteDeadline implements net.Conn; lbd's bound, when set, wins over a later deadline.
func (c *trackedConn) SetWriteDeadline(t time.Time) error {
	return c.setDeadline(t, c.TCPConn.SetWriteDeadline)
}

func (c *trackedConn) setDeadline(t time.Time, set func(time.Time) error) error {
	for {
		b := c.bound.Load()
		err := set(capDeadline(t, b))
		if c.bound.Load() == b { // a bound set meanwhile would otherwise be overwritten
			return err
		}
	}
}

func capDeadline(t time.Time, bound int64) time.Time {
	if bound == 0 {
		return t
	}
	if b := time.Unix(0, bound); t.IsZero() || t.After(b) {
		return b
	}
	return t
}

// limit bounds every read and write from now on by t, or lifts the bound with the zero time.
func (c *trackedConn) limit(t time.Time) {
	var b int64
	if !t.IsZero() {
		b = t.UnixNano()
	}
	c.bound.Store(b)
	c.TCPConn.SetDeadline(t)
}

// expire makes every read and write fail at once; the connection cannot be used again.
func (c *trackedConn) expire() { c.limit(time.Unix(1, 0)) }

// limitTo bounds the connection by ctx until the returned bound is lifted: by ctx's
// deadline, and at once when ctx ends.
func (c *trackedConn) limitTo(ctx context.Context) ctxBound {
	if ctx.Done() == nil {
		return ctxBound{}
	}
	if d, ok := ctx.Deadline(); ok {
		c.limit(d)
	}
	return ctxBound{c: c, stop: context.AfterFunc(ctx, c.expire)}
}

// ctxBound is a connection bounded by a context; the zero value bounds nothing.
type ctxBound struct {
	c    *trackedConn
	stop func() bool
}

// lift lifts the bound and reports whether ctx ended meanwhile (the connection is then
// unusable and keeps failing every read and write).
func (b ctxBound) lift() (expired bool) {
	if b.c == nil {
		return false
	}
	if !b.stop() {
		return true
	}
	b.c.limit(time.Time{})
	return false
}

var _ syscall.Conn = (*trackedConn)(nil)

// Close closes the socket and gives the node its open count back, once.
func (c *trackedConn) Close() error {
	err := c.TCPConn.Close()
	if c.closed.CompareAndSwap(false, true) && c.table != nil {
		c.table.Release(c.node.tn)
	}
	return err
}

// NetConn returns the underlying TCP connection.
func (c *trackedConn) NetConn() net.Conn { return c.TCPConn }
