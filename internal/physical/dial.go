package physical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/lbd-go/lbd/internal/wire"
)

// ticket carries one dial attempt's node into the dial function go-sql-driver calls (the root
// registers Dial for the "lb" network). For a counted dial the node's open count was already
// raised by the pick; once the dial succeeds the socket owns that count and gives it back when
// it closes.
type ticket struct {
	node    *Node
	counted bool    // false for a probe connection, which is not application load
	dialed  bool    // go-sql-driver called Dial: whatever failed before (BeforeConnect, credentials) did not reach the node
	sock    *Socket // set when the dial succeeded; a counted one owns the node's count from then on
	// password, when set (SetDialPassword), is this dial's password: a credentials provider's
	// answer, which the TLS login may have to send itself (login.go).
	password *string
}

// SetDialPassword tells the dial under way in ctx (one Connect made) the password its login
// uses, when that is not the node's configured one (a credentials provider gave it for this
// dial). Without a dial in ctx it does nothing.
func SetDialPassword(ctx context.Context, password string) {
	if t, ok := ctx.Value(ticketKey{}).(*ticket); ok {
		t.password = &password
	}
}

type ticketKey struct{}

// ErrNoTicket is returned when the lb network is dialed by something other than an lbd
// Connector, e.g. sql.Open("mysql", "...@lb(...)/db").
var ErrNoTicket = errors.New(`lbd: the "lb" network can only be dialed through an lbd Connector (use lbd.Open, lbd.NewConnector or sql.Open("lbd", dsn))`)

// Dial is the function the root registers with go-sql-driver for the lb network. addr is the
// single node the Connector chose (each node has its own go-sql-driver config), and ctx carries
// the ticket Connect put there.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	t, ok := ctx.Value(ticketKey{}).(*ticket)
	if !ok {
		return nil, ErrNoTicket
	}
	t.dialed = true
	if t.node.addr != addr {
		return nil, fmt.Errorf("lbd: go-sql-driver was asked to dial %s for node %s: a BeforeConnect must not change the config's Addr or Net",
			strconv.Quote(addr), strconv.Quote(t.node.addr))
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
	s := &Socket{TCPConn: tcp, conn: tcp, node: t.node, counted: t.counted, recording: t.counted, password: t.node.transport.password}
	if t.password != nil {
		s.password = *t.password
	}
	s.guard.Init(wire.Limits{})
	t.sock = s
	greeting, err := readGreeting(ctx, tcp)
	if err == nil {
		err = s.upgrade(ctx, greeting, t.node.transport)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.pending = greeting
	return s, nil
}

// Connect runs go-sql-driver's Connect for n through Dial. counted says whether the connection
// is application load (its node's count was raised by the pick) or a probe connection. sock is
// the socket beneath when the dial got that far, also on error: the caller closes it then, which
// gives a counted node's count back once, even if go-sql-driver closed it already.
//
// When the proxy broke the protocol (the guard stopped a packet, or go-sql-driver panicked on
// one the guard let through) the error wraps ErrProtocol and names the node, and the socket is
// closed: nothing of the attempt stays behind but, after a panic, go-sql-driver's watcher
// goroutine, which only go-sql-driver can stop (the guard checks every packet of the handshake
// so that this does not happen).
func Connect(ctx context.Context, n *Node, counted bool) (conn driver.Conn, sock *Socket, err error) {
	t := &ticket{node: n, counted: counted}
	defer func() {
		if r := recover(); r != nil {
			conn, err = nil, ProtocolError(n.addr, fmt.Errorf("go-sql-driver could not parse the handshake: %v", r))
			if t.sock != nil {
				t.sock.Close()
			}
		}
		sock = t.sock
	}()
	conn, err = n.connector.Connect(context.WithValue(ctx, ticketKey{}, t))
	err = BoundErr(err)
	switch {
	case err != nil && !t.dialed:
		err = fmt.Errorf("%w for node %s: %w", ErrNoCredentials, strconv.Quote(n.addr), err)
	case err != nil && t.sock != nil:
		if perr := t.sock.ProtocolErr(); perr != nil {
			err = perr
		}
	case err == nil && t.sock == nil: // go-sql-driver dialed on its own: a BeforeConnect changed Net
		CloseQuietly(conn)
		conn, err = nil, fmt.Errorf("lbd: the connection to node %s did not go through lbd's dial: a BeforeConnect must not change the config's Addr or Net",
			strconv.Quote(n.addr))
	}
	return conn, t.sock, err
}

// ErrNoCredentials is wrapped by the error of a dial that never reached its node because what
// runs before it failed: the credentials function (the root's WithCredentials) or
// go-sql-driver's Config.BeforeConnect. The root re-exports it as lbd.ErrNoCredentials, which
// documents it.
var ErrNoCredentials = errors.New("lbd: no credentials")

// ErrProtocol is wrapped by every error lbd returns when a proxy broke the MySQL protocol; the
// root re-exports it as lbd.ErrProtocol, which documents it.
var ErrProtocol = errors.New("lbd: the proxy broke the MySQL protocol")

// ProtocolError is what the application sees when the proxy at addr broke the protocol.
func ProtocolError(addr string, cause error) error {
	return fmt.Errorf("%w: proxy %s: %w; lbd closed the connection", ErrProtocol, addr, cause)
}
