package exception

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// realNetErrors holds errors produced by real sockets on the loopback
// interface, so the table test checks what the net package actually
// returns rather than hand-built look-alikes.
type realNetErrors struct {
	readTimeout    error // Read after SetReadDeadline expired
	reset          error // Read on a connection the peer closed with SO_LINGER 0
	peerClosed     error // Read on a connection the peer closed normally
	localClosed    error // Read on a connection we closed ourselves
	refused        error // Dial to a port nobody listens on
	dialCtxExpired error // DialContext with an already expired deadline
	dialCtxCancel  error // DialContext with an already cancelled context
}

func collectRealNetErrors(t *testing.T) realNetErrors {
	t.Helper()
	var r realNetErrors

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("loopback listener unavailable: %v", err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	// pair returns a connected client and the server side of it.
	pair := func() (client, server net.Conn) {
		t.Helper()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				accepted <- nil
				return
			}
			accepted <- c
		}()
		client, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial loopback: %v", err)
		}
		server = <-accepted
		if server == nil {
			t.Fatal("accept failed")
		}
		return client, server
	}
	buf := make([]byte, 16)

	// A read deadline hit while waiting for data.
	c, s := pair()
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, r.readTimeout = c.Read(buf)
	c.Close()
	s.Close()

	// The peer aborts the connection: linger 0 makes Close send a RST.
	c, s = pair()
	if err := s.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, r.reset = c.Read(buf)
	c.Close()

	// The peer closes normally: FIN, read returns io.EOF.
	c, s = pair()
	s.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, r.peerClosed = c.Read(buf)
	c.Close()

	// Our own end was closed already.
	c, s = pair()
	c.Close()
	_, r.localClosed = c.Read(buf)
	s.Close()

	// Nobody listens: take a free port, then release it.
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := l2.Addr().String()
	l2.Close()
	_, r.refused = net.DialTimeout("tcp", freeAddr, 5*time.Second)

	// The caller's context ends before the dial: the net package reports
	// the deadline as an "i/o timeout" that is also context.DeadlineExceeded.
	var d net.Dialer
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	_, r.dialCtxExpired = d.DialContext(expired, "tcp", addr)
	cancel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, r.dialCtxCancel = d.DialContext(cancelled, "tcp", addr)

	// Check the premises, so a change in the platform shows up as a clear
	// failure here rather than as a puzzling table row.
	for name, e := range map[string]error{
		"readTimeout": r.readTimeout, "reset": r.reset, "peerClosed": r.peerClosed,
		"localClosed": r.localClosed, "refused": r.refused,
		"dialCtxExpired": r.dialCtxExpired, "dialCtxCancel": r.dialCtxCancel,
	} {
		if e == nil {
			t.Fatalf("%s: expected an error, got nil", name)
		}
	}
	var ne net.Error
	if !errors.As(r.readTimeout, &ne) || !ne.Timeout() {
		t.Fatalf("read deadline error is not a net timeout: %#v", r.readTimeout)
	}
	if errors.Is(r.readTimeout, context.DeadlineExceeded) {
		t.Fatalf("read deadline error unexpectedly matches context.DeadlineExceeded")
	}
	if !errors.As(r.dialCtxExpired, &ne) || !ne.Timeout() || !errors.Is(r.dialCtxExpired, context.DeadlineExceeded) {
		t.Fatalf("expired-context dial error is not a context-deadline timeout: %#v", r.dialCtxExpired)
	}
	if !errors.Is(r.dialCtxCancel, context.Canceled) {
		t.Fatalf("cancelled-context dial error does not match context.Canceled: %#v", r.dialCtxCancel)
	}
	return r
}
