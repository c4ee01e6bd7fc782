package physical

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/testkit"
)

// TestTruncatedGreetingsNeverReachTheDriver serves a whole greeting cut at every length: each
// must fail cleanly (the leak check in TestMain catches a go-sql-driver panic, which leaks a
// goroutine).
func TestTruncatedGreetingsNeverReachTheDriver(t *testing.T) {
	real := captureGreeting(t, mysqlfake.Start(t, mysqlfake.Config{}).Addr())
	payload := real[4:]
	for cut := 1; cut < len(payload); cut++ {
		p := payload[:cut]
		if err := checkGreeting(p); err == nil {
			continue // long enough to be read safely; go-sql-driver fails on it later
		}
		pkt := append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}, p...)
		addr := testkit.Replay(t, pkt)
		r := newRig(t, addr)
		dc, sock, err := Connect(context.Background(), r.node, false)
		if sock != nil {
			sock.Close()
		}
		if dc != nil {
			dc.Close()
		}
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
