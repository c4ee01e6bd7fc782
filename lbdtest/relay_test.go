package lbdtest

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// fakeBackend accepts connections and records every byte clients send.
type fakeBackend struct {
	ln   net.Listener
	mu   sync.Mutex
	got  bytes.Buffer
	conn net.Conn
	wg   sync.WaitGroup
}

func newFakeBackend(t *testing.T) *fakeBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeBackend{ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			f.conn = c
			f.mu.Unlock()
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					f.mu.Lock()
					f.got.Write(buf[:n])
					f.mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		f.mu.Lock()
		if f.conn != nil {
			_ = f.conn.Close()
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeBackend) received() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.got.Bytes()...)
}

// send writes b from the backend side of the current connection.
func (f *fakeBackend) send(t *testing.T, b []byte) {
	t.Helper()
	f.mu.Lock()
	c := f.conn
	f.mu.Unlock()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// rawProxy starts a proxy in front of f and connects a raw client to it.
func rawProxy(t *testing.T, f *fakeBackend) (*Proxy, net.Conn) {
	t.Helper()
	p, err := newProxy(&backend{network: "tcp", addr: f.ln.Addr().String()}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.shutdown() })
	client, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	waitFor(t, 5*time.Second, "backend connection", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.conn != nil
	})
	return p, client
}

// mkPacket builds a wire packet with the given sequence id and payload.
func mkPacket(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

func TestErrPacketEncoding(t *testing.T) {
	got := errPacket(1, &mysql.MySQLError{Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}, Message: "hi"})
	want := []byte{11, 0, 0, 1, 0xff, 0x41, 0x1f, '#', '0', '8', '0', '0', '4', 'h', 'i'}
	if !bytes.Equal(got, want) {
		t.Fatalf("errPacket = % x, want % x", got, want)
	}
	// A zero SQLSTATE becomes HY000.
	if got := errPacket(1, &mysql.MySQLError{Number: 1}); string(got[8:13]) != "HY000" {
		t.Fatalf("default state = %q", got[8:13])
	}
}

func TestRelayForwardsAndFailsSplitPackets(t *testing.T) {
	f := newFakeBackend(t)
	p, client := rawProxy(t, f)

	greeting := mkPacket(0, []byte("server greeting"))
	f.send(t, greeting)
	buf := make([]byte, len(greeting))
	if _, err := io.ReadFull(client, buf); err != nil || !bytes.Equal(buf, greeting) {
		t.Fatalf("greeting = %q, %v", buf, err)
	}

	// Handshake response (sequence 1, no TLS or compression), then a
	// query split over a maximal packet and a continuation packet.
	hello := mkPacket(1, []byte{0, 0, 0, 0, 'u'})
	big := make([]byte, maxPayloadLen)
	big[0] = comQuery
	copy(big[1:], "SELECT 'split'")
	for i := 15; i < len(big); i++ {
		big[i] = ' '
	}
	split := append(mkPacket(0, big), mkPacket(1, []byte(" -- tail"))...)
	stream := append(append([]byte(nil), hello...), split...)
	if _, err := client.Write(stream); err != nil {
		t.Fatal(err)
	}
	want := stream
	waitFor(t, 20*time.Second, "split query forwarded", func() bool { return len(f.received()) >= len(want) })
	if !bytes.Equal(f.received(), want) {
		t.Fatal("backend did not receive the exact bytes")
	}
	if p.Statements() != 1 {
		t.Fatalf("Statements = %d, want 1", p.Statements())
	}

	// The same split query failed: nothing reaches the backend and the
	// ERR packet continues the sequence after the last client packet.
	p.FailNext(1, &mysql.MySQLError{Number: 2006, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "gone"})
	if _, err := client.Write(split); err != nil {
		t.Fatal(err)
	}
	wantErr := errPacket(2, &mysql.MySQLError{Number: 2006, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "gone"})
	buf = make([]byte, len(wantErr))
	if _, err := io.ReadFull(client, buf); err != nil || !bytes.Equal(buf, wantErr) {
		t.Fatalf("ERR = % x, %v; want % x", buf, err, wantErr)
	}
	// A following small command goes through.
	ping := mkPacket(0, []byte{0x0e})
	if _, err := client.Write(ping); err != nil {
		t.Fatal(err)
	}
	want = append(want, ping...)
	waitFor(t, 5*time.Second, "ping forwarded", func() bool { return len(f.received()) >= len(want) })
	if !bytes.Equal(f.received(), want) {
		t.Fatal("failed statement leaked to the backend")
	}
	if p.Statements() != 2 {
		t.Fatalf("Statements = %d, want 2", p.Statements())
	}
}

func TestRelayPassesEncryptedStreams(t *testing.T) {
	f := newFakeBackend(t)
	p, client := rawProxy(t, f)
	p.FailNext(-1, nil)

	// An SSL request: capability flags with CLIENT_SSL, sequence 1. What
	// follows is opaque, even where it looks like a COM_QUERY.
	sslRequest := mkPacket(1, []byte{0x00, 0x08, 0, 0, 0, 0, 0, 0})
	lookalike := mkPacket(0, []byte{comQuery, 'S', 'E', 'L'})
	stream := append(append([]byte(nil), sslRequest...), lookalike...)
	if _, err := client.Write(stream); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "bytes forwarded", func() bool { return len(f.received()) >= len(stream) })
	if !bytes.Equal(f.received(), stream) {
		t.Fatal("backend did not receive the exact bytes")
	}
	if p.Statements() != 0 {
		t.Fatalf("Statements = %d on an encrypted stream", p.Statements())
	}
}

func TestRelayClientGoneWhileHung(t *testing.T) {
	f := newFakeBackend(t)
	p, client := rawProxy(t, f)
	waitFor(t, 5*time.Second, "connection counted", func() bool { return p.OpenConns() == 1 })
	p.Hang()
	f.send(t, mkPacket(0, []byte("held")))
	_ = client.Close()
	waitFor(t, 5*time.Second, "connection closed", func() bool { return p.OpenConns() == 0 })
	p.Resume()
}
