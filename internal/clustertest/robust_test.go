package clustertest

import (
	"github.com/lbd-go/lbd"

	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/lbd-go/lbd/lbdtest"
)

// garbageServer accepts connections and answers with a truncated handshake that go-sql-driver
// cannot read (it panics on it without lbd's guard).
func garbageServer(t *testing.T) string {
	return replayServer(t, []byte{3, 0, 0, 0, 0x0a, 'b', '0'})
}

func TestProxyAnsweringGarbageIsAnErrorNotACrash(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	bad := garbageServer(t)
	logs := &logRecorder{}
	dsn := cl.User() + ":" + cl.Password() + "@lb(" + bad + "," + cl.Addrs()[0] + ")/" + cl.Database() + "?timeout=1s"
	c, err := lbd.NewConnector(dsn, fast(100*time.Millisecond, 100*time.Millisecond, time.Hour, logs)...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, 5*time.Second, "the garbage proxy to be probed down", func() bool {
		s, _ := nodeState(c, bad)
		return s == lbd.StateDown
	})
	for i := range 5 {
		cn, err := c.Connect(context.Background())
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		cn.Close()
	}
	ns, _ := c.Stats().Node(bad)
	if ns.Open != 0 || ns.LastError == "" {
		t.Fatalf("garbage proxy: %+v, want no open connection and a recorded error", ns)
	}
}

func TestCallerDeadlineIsNotBlamedOnNodes(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	_, c := openDB(t, cl, "", quiet()...)
	for i := range 600 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%300)*time.Microsecond)
		if cn, err := c.Connect(ctx); err == nil {
			cn.Close()
		}
		cancel()
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != lbd.StateUp {
			t.Fatalf("node %s is %v after callers' deadlines expired: %s", ns.Addr, ns.State, ns.LastError)
		}
		if ns.Open != 0 {
			t.Fatalf("node %s holds %d connections after every caller gave up", ns.Addr, ns.Open)
		}
	}
}

func TestCloseCutsAHungDialShort(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	c, err := lbd.NewConnector(cl.DSN(""), append(quiet(), lbd.WithLogger(discardLogger()))...) // no timeout in the DSN
	if err != nil {
		t.Fatal(err)
	}
	cl.Proxy(0).Hang()
	defer cl.Proxy(0).Resume()
	accepted := cl.Proxy(0).TotalConns()
	done := make(chan error, 1)
	go func() {
		_, err := c.Connect(context.Background())
		done <- err
	}()
	// The hung proxy has accepted the dial's TCP connection: the dial now waits for a greeting
	// that never comes.
	waitFor(t, 5*time.Second, "the hung proxy to accept the dial", func() bool { return cl.Proxy(0).TotalConns() > accepted })
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Connect to a hung proxy succeeded")
		}
		if !errors.Is(err, lbd.ErrClosed) && !errors.Is(err, context.Canceled) {
			t.Logf("Connect ended with %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Close did not cut the hung dial short")
	}
	if ns := c.Stats().Nodes[0]; ns.Open != 0 || ns.State != lbd.StateUp {
		t.Fatalf("after Close: %+v, want no open connection and the node not blamed", ns)
	}
}

// TestTruncatedGreetingsNeverReachTheDriver serves a real greeting cut at every length: each
// must fail cleanly (goleak in TestMain catches a go-sql-driver panic, which leaks a goroutine).
func TestTruncatedGreetingsNeverReachTheDriver(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	real := captureGreeting(t, cl.Addrs()[0])
	payload := real[4:]
	for cut := 1; cut < len(payload); cut++ {
		p := payload[:cut]
		if err := checkGreeting(p); err == nil {
			continue // long enough to be read safely; go-sql-driver fails on it later
		}
		pkt := append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}, p...)
		addr := replayServer(t, pkt)
		c, err := lbd.NewConnector("u:p@lb("+addr+")/db?timeout=1s", append(quiet(), lbd.WithLogger(discardLogger()))...)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Connect(context.Background())
		c.Close()
		if !errors.Is(err, errBadGreeting) {
			t.Fatalf("greeting cut at %d: %v, want errBadGreeting", cut, err)
		}
	}
}

func TestGreetingErrorPackets(t *testing.T) {
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{"\xff", false},
		{"\xff\x10\x04", false},
		{"\xff\x10\x04#080", false},
		{"\xff\x10\x04#08004Too many connections", true},
		{"\xff\x10\x04Too many connections", true},
		{"\x0a5.7.0", false},
		{"\x0a5.7.0\x00\x01\x02", false},
	} {
		if err := checkGreeting([]byte(tc.payload)); (err == nil) != tc.ok {
			t.Errorf("checkGreeting(%q) = %v, want ok=%v", tc.payload, err, tc.ok)
		}
	}
}

func captureGreeting(t *testing.T, addr string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := readGreeting(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// replayServer answers every connection with packet, then waits for the client to leave.
func replayServer(t *testing.T, packet []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.Write(packet)
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// A connection database/sql opened but never used may sit in its pool without IsValid ever
// being called; retiring it must close it at once, and its first use must fail before sending.
func TestFreshConnectionIsRetiredAtOnce(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	_, c := openDB(t, cl, "", quiet()...)
	dc, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := dc.(*conn)
	if !w.retire() {
		t.Fatal("a fresh connection was not closed at once")
	}
	if got := c.Stats().Nodes[0].Open; got != 0 {
		t.Fatalf("open = %d after retiring the fresh connection", got)
	}
	before := cl.Proxy(0).Statements()
	if _, err := w.ExecContext(context.Background(), "SELECT 1", nil); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("use of a retired fresh connection = %v, want driver.ErrBadConn", err)
	}
	if cl.Proxy(0).Statements() != before {
		t.Fatal("a statement reached the proxy over a retired connection")
	}
	w.Close()
}
