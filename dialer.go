package lbd

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/go-sql-driver/mysql"
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
	node     *node
	balancer *balancer    // nil for a probe connection, which is not counted
	conn     *trackedConn // set when the dial succeeded
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
	tc := &trackedConn{TCPConn: tcp, node: t.node, balancer: t.balancer}
	if t.balancer != nil {
		t.conn = tc // from here on the connection owns the node's count
	}
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
type trackedConn struct {
	*net.TCPConn
	node     *node
	balancer *balancer // nil: not counted (probe connection)
	closed   atomic.Bool
	pending  []byte // the server's greeting, read and checked by the dialer, handed over first
}

// Read serves the checked greeting first, then the socket.
func (c *trackedConn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.TCPConn.Read(b)
}

var _ syscall.Conn = (*trackedConn)(nil)

// Close closes the socket and releases the node's count once.
func (c *trackedConn) Close() error {
	err := c.TCPConn.Close()
	if c.closed.CompareAndSwap(false, true) && c.balancer != nil {
		c.balancer.release(c.node)
	}
	return err
}

// NetConn returns the underlying TCP connection.
func (c *trackedConn) NetConn() net.Conn { return c.TCPConn }
