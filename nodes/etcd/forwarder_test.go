package etcd_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// forwarder relays TCP connections to a target and can cut them all, so that a test can take
// etcd away from one client while another keeps writing.
type forwarder struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
}

func startForwarder(t testing.TB, target string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln, target: target, conns: map[net.Conn]bool{}}
	f.wg.Go(f.accept)
	t.Cleanup(f.close)
	return f
}

// Addr is where clients connect.
func (f *forwarder) Addr() string { return f.ln.Addr().String() }

func (f *forwarder) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.cut {
			f.mu.Unlock()
			c.Close()
			continue
		}
		f.conns[c] = true
		f.mu.Unlock()
		f.wg.Go(func() { f.relay(c) })
	}
}

func (f *forwarder) relay(c net.Conn) {
	defer f.drop(c)
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	f.mu.Lock()
	if f.cut {
		f.mu.Unlock()
		up.Close()
		return
	}
	f.conns[up] = true
	f.mu.Unlock()
	defer f.drop(up)
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		up.Close()
		close(done)
	}()
	io.Copy(c, up)
	c.Close()
	<-done
}

func (f *forwarder) drop(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// setCut closes every relayed connection and refuses new ones (true), or relays again (false).
func (f *forwarder) setCut(cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut = cut
	if cut {
		for c := range f.conns {
			c.Close()
		}
	}
}

func (f *forwarder) close() {
	f.ln.Close()
	f.setCut(true)
	f.wg.Wait()
}
