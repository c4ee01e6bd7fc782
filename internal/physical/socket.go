package physical

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lbd-go/lbd/internal/wire"
)

// Socket is a node's TCP connection that gives the node's open count back exactly once,
// however it closes (pool close, error, server reset). It embeds *net.TCPConn so keepalive
// settings and syscall.Conn stay reachable: go-sql-driver's liveness check at checkout needs
// SyscallConn.
//
// Every byte passes lbd's protocol guard (internal/wire) on its way, so a packet go-sql-driver
// cannot parse safely fails the read instead of reaching it. TLS and the compressed protocol
// run here, beneath go-sql-driver (see Transport), so the guard reads plain packets on every
// transport. A bound set by lbd (a probe's timeout, a caller's context ending) caps every
// deadline go-sql-driver sets, so no read or write outlives it.
type Socket struct {
	*net.TCPConn
	node    *Node
	counted bool // gives the node's open count back at Close (not a probe connection)
	closed  atomic.Bool
	pending []byte // the server's greeting, read and checked by the dialer, handed over first

	// Used only by the goroutine reading and writing the connection, like the guard.
	conn        net.Conn          // carries the packets: the TCP connection, or TLS over it
	tlsOn       bool              // TLS, run by lbd: the login needs the care login.go takes
	loginShift  byte              // TLS: how far the login's numbers run ahead of go-sql-driver's
	z           *wire.Compression // the compressed protocol, once the login's OK has passed
	zAfterLogin bool              // turn compression on after the login
	addCaps     uint32            // flags lbd adds to go-sql-driver's handshake response
	sentLogin   bool              // the handshake response went out
	password    string            // the login's password, for the TLS login's own sends (login.go)
	loggedIn    bool              // the login's answer has passed
	srvSeq      wire.SeqWalker    // packet headers of what go-sql-driver reads
	cliSeq      wire.SeqWalker    // and of what it writes
	next        byte              // compression: the number go-sql-driver expects next from the server
	wbuf        []byte            // a login packet with lbd's changes

	guard wire.Guard   // used only by the goroutine reading and writing the connection
	bound atomic.Int64 // lbd's deadline for every read and write, in Unix nanoseconds; 0: none

	// Session tracking (session.go), used only by the goroutine reading and writing the
	// connection: what the server reported, the commands lbd sends ahead of the client's next
	// one, and the answers to those still to read aside.
	session    SessionState
	ahead      []byte
	aheadKinds []byte // what each command in ahead is (asideTrack, ...)
	asideKinds []byte // what each answer still to read aside answers
	asideBuf   []byte
	// go-sql-driver's connect-time statements (COM_QUERY packets as written), recorded until
	// the connection is adopted, replayed after a reset; connectOver: they passed the bound.
	recording   bool
	connectCmds []byte
	connectOver bool
	// The errors that answered the latest reset and the statements replayed after it; 0: none.
	resetErr, replayErr uint16
}

// Read serves the checked greeting first, then the connection (inflated, with compression),
// through the guard.
func (s *Socket) Read(b []byte) (int, error) {
	if err := s.guard.Err(); err != nil {
		return 0, err
	}
	var n int
	var err error
	if len(s.pending) == 0 && s.tlsOn && !s.loggedIn && s.sentLogin {
		if err := s.readLoginPacket(); err != nil { // see login.go
			return 0, err
		}
	}
	if len(s.asideKinds) > 0 {
		var src io.Reader = s.conn
		if s.z != nil {
			src = s.z
		}
		if err := s.readAside(src); err != nil { // see session.go
			if errors.Is(err, wire.ErrViolation) {
				return 0, s.guard.Stop(err)
			}
			return 0, err
		}
	}
	switch {
	case len(s.pending) > 0:
		n = copy(b, s.pending)
		s.pending = s.pending[n:]
	case s.z != nil:
		n, err = s.z.Read(b)
		if errors.Is(err, wire.ErrViolation) {
			return 0, s.guard.Stop(err)
		}
		// Servers renumber the packets inside compressed ones at each flush of their buffer
		// (clients do not check them); go-sql-driver, reading plain packets, does.
		s.srvSeq.Walk(b[:n], func(seq *byte) { *seq = s.next; s.next++ })
	default:
		n, err = s.conn.Read(b)
	}
	if gerr := s.guard.Server(b[:n]); gerr != nil {
		return 0, gerr
	}
	if !s.loggedIn && s.sentLogin && s.guard.Idle() {
		s.loggedIn = true
		if s.zAfterLogin {
			s.z = wire.NewCompression(s.conn)
		}
	}
	return n, err
}

// Write sends b and shows the guard what was sent: it follows the commands to know what answer
// to expect. During the login the handshake response announces what lbd negotiates beneath
// go-sql-driver, and over TLS the packets are numbered on past the SSL request and whatever lbd
// sent in go-sql-driver's place (login.go). With compression, a packet numbered 0 starts a
// command, whose compressed packets are numbered afresh. With session tracking, the commands lbd
// sends on its own go out ahead of the next command, in the same write (session.go).
func (s *Socket) Write(b []byte) (int, error) {
	out := b
	if s.loggedIn && (s.session.negotiated || len(s.ahead) > 0 || s.recording) {
		out = s.sendAhead(b)
	}
	ahead := len(out) - len(b)
	switch {
	case s.z != nil:
		for a := out[:ahead]; len(a) >= 4; { // each a compressed packet of its own, numbered as a command's
			n := 4 + (int(a[0]) | int(a[1])<<8 | int(a[2])<<16)
			s.z.ResetSeq()
			if _, err := s.z.Write(a[:n]); err != nil {
				return 0, err
			}
			a = a[n:]
		}
		s.cliSeq.Walk(b, func(seq *byte) {
			if *seq == 0 { // a new command: the compressed packets are numbered afresh
				s.z.ResetSeq()
			}
			s.next = *seq + 1
		})
	case !s.loggedIn && (s.tlsOn || s.addCaps != 0):
		// A login packet as the server must see it (see login.go): all of it or nothing of b
		// counts as written.
		out := s.loginWrite(b)
		s.sentLogin = true
		if _, err := s.conn.Write(out); err != nil {
			return 0, err
		}
		s.guard.Client(b)
		return len(b), nil
	}
	s.sentLogin = true
	var n int
	var err error
	if s.z != nil {
		n, err = s.z.Write(b)
	} else {
		n, err = s.conn.Write(out)
		n = max(0, n-ahead)
	}
	s.guard.Client(b[:n])
	return n, err
}

// ProtocolErr returns the guard's finding as an error naming the node, or nil.
func (s *Socket) ProtocolErr() error {
	if s == nil {
		return nil
	}
	if err := s.guard.Err(); err != nil {
		return ProtocolError(s.node.addr, err)
	}
	return nil
}

// Answered reports whether the answer to the latest command began with anything but an ERR
// packet (wire.Guard.Answered); known is false when the guard cannot see the packets (see
// wire.Guard.Opaque) or there is no socket.
func (s *Socket) Answered() (answered, known bool) {
	if s == nil || s.guard.Opaque() {
		return false, false
	}
	return s.guard.Answered(), true
}

// Autocommitted reports whether the server's status flags said, before the latest command,
// that autocommit was on and no transaction open (wire.Guard.Autocommitted); false when the
// guard cannot see the packets (TLS, compression) or there is no socket.
func (s *Socket) Autocommitted() bool {
	return s != nil && !s.guard.Opaque() && s.guard.Autocommitted()
}

// ReadOnlyTx reports whether the server's status flags, before the latest command, said a
// read-only transaction was open (wire.Guard.ReadOnlyTx); false when the guard cannot see the
// packets or there is no socket.
func (s *Socket) ReadOnlyTx() bool {
	return s != nil && !s.guard.Opaque() && s.guard.ReadOnlyTx()
}

// AnswerRead reports whether the whole answer to the latest command has been read from the
// socket, so that go-sql-driver finishes it from its buffer without reading again; false when
// the guard cannot see the packets (see wire.Guard.Opaque) or there is no socket.
func (s *Socket) AnswerRead() bool {
	return s != nil && !s.guard.Opaque() && s.guard.Idle()
}

// SetDeadline implements net.Conn; lbd's bound, when set, wins over a later deadline.
func (s *Socket) SetDeadline(t time.Time) error {
	return s.setDeadline(t, s.TCPConn.SetDeadline)
}

// SetReadDeadline implements net.Conn; lbd's bound, when set, wins over a later deadline.
func (s *Socket) SetReadDeadline(t time.Time) error {
	return s.setDeadline(t, s.TCPConn.SetReadDeadline)
}

// SetWriteDeadline implements net.Conn; lbd's bound, when set, wins over a later deadline.
func (s *Socket) SetWriteDeadline(t time.Time) error {
	return s.setDeadline(t, s.TCPConn.SetWriteDeadline)
}

func (s *Socket) setDeadline(t time.Time, set func(time.Time) error) error {
	for {
		b := s.bound.Load()
		err := set(capDeadline(t, b))
		if s.bound.Load() == b { // a bound set meanwhile would otherwise be overwritten
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

// Limit bounds every read and write from now on by t, or lifts the bound with the zero time.
func (s *Socket) Limit(t time.Time) {
	if s == nil {
		return
	}
	var b int64
	if !t.IsZero() {
		b = t.UnixNano()
	}
	s.bound.Store(b)
	s.TCPConn.SetDeadline(t)
}

// expire makes every read and write fail at once; the connection cannot be used again.
func (s *Socket) expire() { s.Limit(time.Unix(1, 0)) }

// LimitTo bounds the connection by ctx until the returned bound is lifted: by ctx's
// deadline, and at once when ctx ends.
func (s *Socket) LimitTo(ctx context.Context) Bound {
	if s == nil || ctx.Done() == nil {
		return Bound{}
	}
	if d, ok := ctx.Deadline(); ok {
		s.Limit(d)
	}
	return Bound{s: s, stop: context.AfterFunc(ctx, s.expire)}
}

// Bound is a connection bounded by a context; the zero value bounds nothing.
type Bound struct {
	s    *Socket
	stop func() bool
}

// Lift lifts the bound and reports whether ctx ended meanwhile (the connection is then
// unusable and keeps failing every read and write).
func (b Bound) Lift() (expired bool) {
	if b.s == nil {
		return false
	}
	if !b.stop() {
		return true
	}
	b.s.Limit(time.Time{})
	return false
}

var _ syscall.Conn = (*Socket)(nil)

// Close closes the socket and gives the node its open count back, once.
func (s *Socket) Close() error {
	if s == nil {
		return nil
	}
	err := s.TCPConn.Close()
	if s.closed.CompareAndSwap(false, true) && s.counted {
		s.node.table.Release(s.node.tn)
	}
	return err
}

// NetConn returns the underlying TCP connection.
func (s *Socket) NetConn() net.Conn { return s.TCPConn }
