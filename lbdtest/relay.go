package lbdtest

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"time"
)

// backendDialTimeout bounds how long a relay waits to connect to the
// backend.
const backendDialTimeout = 10 * time.Second

// relayBufSize is the read buffer size for each direction of a relay.
const relayBufSize = 32 << 10

// relayConn carries one client connection to the backend. It runs three
// goroutines: readClient drains the client socket into chunks,
// clientToBackend parses those chunks into packets and forwards them (this
// is where faults are injected), and serve dials the backend and then
// copies backend bytes to the client.
type relayConn struct {
	p      *Proxy
	client net.Conn
	ctx    context.Context // done once the connection is torn down
	cancel context.CancelFunc

	chunks    chan []byte   // client bytes, closed after clientEOF
	clientEOF chan struct{} // closed when reading the client fails
	ready     chan struct{} // closed once backend is set

	mu      sync.Mutex // guards backend and closed
	backend net.Conn
	closed  bool

	writeMu sync.Mutex // serialises writes to client
	once    sync.Once
}

func newRelayConn(p *Proxy, client net.Conn) *relayConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &relayConn{
		p:         p,
		client:    client,
		ctx:       ctx,
		cancel:    cancel,
		chunks:    make(chan []byte, 16),
		clientEOF: make(chan struct{}),
		ready:     make(chan struct{}),
	}
}

// serve runs the connection until either side closes, the proxy stops or
// the cluster closes. The caller has already counted it in p.wg.
func (c *relayConn) serve() {
	defer c.p.wg.Done()
	defer c.close()
	c.p.wg.Add(2)
	go c.readClient()
	go c.clientToBackend()

	// While hung, do not even connect: the client gets no handshake.
	if !c.waitOpen() {
		return
	}
	if c.p.stopping.Load() {
		c.p.turnedAway.Add(1)
		e := ShutdownError
		c.writeClient(errPacket(0, &e))
		return
	}
	d := net.Dialer{Timeout: backendDialTimeout}
	b, err := d.DialContext(c.ctx, c.p.backendNet, c.p.backendAddr)
	if err != nil {
		if c.ctx.Err() == nil {
			c.p.log.Warn("lbdtest: backend dial failed", "proxy", c.p.addr, "err", err)
		}
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = b.Close()
		return
	}
	c.backend = b
	c.mu.Unlock()
	close(c.ready)
	c.backendToClient(b)
}

// close tears the connection down; it is safe to call many times and from
// any goroutine.
func (c *relayConn) close() {
	c.once.Do(func() {
		c.cancel()
		_ = c.client.Close()
		c.mu.Lock()
		c.closed = true
		b := c.backend
		c.mu.Unlock()
		if b != nil {
			_ = b.Close()
		}
		c.p.connClosed(c)
	})
}

// waitOpen blocks while the proxy is hung. It returns false when the
// connection was torn down meanwhile; a client that goes away while the
// proxy is hung tears the connection down.
func (c *relayConn) waitOpen() bool {
	open := c.p.gate.open()
	select {
	case <-open:
		return c.ctx.Err() == nil
	default:
	}
	select {
	case <-open:
		return c.ctx.Err() == nil
	case <-c.ctx.Done():
		return false
	case <-c.clientEOF:
		c.close()
		return false
	}
}

// readClient copies client bytes into c.chunks so that a client going
// away is noticed even while the other goroutines are stalled.
func (c *relayConn) readClient() {
	defer c.p.wg.Done()
	defer close(c.chunks)
	defer close(c.clientEOF)
	buf := make([]byte, relayBufSize)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			chunk := make([]byte, n)
			copy(chunk, buf[:n])
			select {
			case c.chunks <- chunk:
			case <-c.ctx.Done():
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// backendToClient copies backend bytes to the client unparsed.
func (c *relayConn) backendToClient(b net.Conn) {
	buf := make([]byte, relayBufSize)
	for {
		n, err := b.Read(buf)
		if n > 0 {
			if !c.writeClient(buf[:n]) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// writeClient writes b to the client once traffic may flow. It reports
// whether the write succeeded; on failure the connection is torn down.
func (c *relayConn) writeClient(b []byte) bool {
	if !c.waitOpen() {
		return false
	}
	c.writeMu.Lock()
	_, err := c.client.Write(b)
	c.writeMu.Unlock()
	if err != nil {
		c.close()
		return false
	}
	return true
}

// writeBackend writes b to the backend once it is connected and traffic
// may flow. It reports whether the write succeeded; on failure the
// connection is torn down.
func (c *relayConn) writeBackend(b []byte) bool {
	select {
	case <-c.ready:
	case <-c.ctx.Done():
		return false
	}
	if !c.waitOpen() {
		return false
	}
	if _, err := c.backend.Write(b); err != nil {
		c.close()
		return false
	}
	return true
}

// sleep waits for d, returning false if the connection is torn down first.
func (c *relayConn) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// clientToBackend forwards client packets to the backend, counting,
// delaying and failing statements on the way.
func (c *relayConn) clientToBackend() {
	defer c.p.wg.Done()
	defer c.close()
	r := &chunkReader{ch: c.chunks, done: c.ctx.Done()}
	var (
		buf        []byte
		first      = true
		continuing bool // previous packet had a maximal payload
		swallowing bool // dropping the rest of a failed command
		failErr    []byte
	)
	for {
		pkt, err := readPacket(r, buf)
		if err != nil {
			return
		}
		if cap(pkt) <= relayBufSize {
			buf = pkt[:0] // reuse small buffers; let large ones go
		} else {
			buf = nil
		}
		if first {
			first = false
			if clientCapabilities(pkt)&(capSSL|capCompress) != 0 {
				// The rest of the stream is encrypted or compressed.
				if c.writeBackend(pkt) {
					c.rawToBackend(r)
				}
				return
			}
			if user, ok := loginUser(pkt); ok {
				c.p.noteLogin(user)
			}
		}
		full := pkt.payloadLen() == maxPayloadLen
		switch {
		case continuing:
			if swallowing {
				if !full {
					swallowing = false
					e := errPacketFor(pkt.seq()+1, failErr)
					if !c.writeClient(e) {
						return
					}
				}
			} else if !c.writeBackend(pkt) {
				return
			}
		case pkt.seq() == 0 && isStatement(pkt.command()):
			c.p.noteStatement(pkt.payload()[1:], hasText(pkt.command()))
			delay := c.p.Latency()
			if f := c.p.delayText.Load(); f != nil && hasText(pkt.command()) && bytes.HasPrefix(pkt.payload()[1:], f.prefix) {
				delay += f.d
			}
			if !c.sleep(delay) {
				return
			}
			e := c.p.fail.take()
			if f := c.p.failText.Load(); e == nil && f != nil && hasText(pkt.command()) && bytes.HasPrefix(pkt.payload()[1:], f.prefix) {
				textErr := f.err
				e = &textErr
			}
			if e == nil && c.p.stopping.Load() {
				shutdown := ShutdownError
				e = &shutdown
			}
			if e != nil {
				c.p.log.Debug("lbdtest: failing statement", "proxy", c.p.addr, "number", e.Number)
				if full {
					swallowing = true
					failErr = errPacket(0, e)
				} else if !c.writeClient(errPacket(1, e)) {
					return
				}
			} else if !c.forwardStatement(pkt, full) {
				return
			}
		default:
			if !c.writeBackend(pkt) {
				return
			}
		}
		continuing = full
	}
}

// forwardStatement sends the statement that starts with pkt to the backend, or answers it the
// way the proxy's role says (see Role). A statement longer than one packet is forwarded as is.
func (c *relayConn) forwardStatement(pkt packet, full bool) bool {
	cmd := pkt.command()
	if full || !hasText(cmd) {
		return c.writeBackend(pkt)
	}
	if cmd == comQuery {
		if status := c.p.replicaStatusAnswer(c.p.Role(), pkt.payload()[1:]); status != nil {
			return c.writeBackend(queryPacket(status))
		}
	}
	text, refuse := roleAnswer(c.p.Role(), cmd, pkt.payload()[1:])
	switch {
	case refuse != nil:
		c.p.refused.Add(1)
		c.p.log.Debug("lbdtest: refusing a write", "proxy", c.p.addr, "role", c.p.Role().String(), "number", refuse.Number)
		return c.writeClient(errPacket(1, refuse))
	case text != nil:
		return c.writeBackend(queryPacket(text))
	}
	return c.writeBackend(pkt)
}

// errPacketFor returns a copy of the encoded ERR packet e with its
// sequence id replaced by seq.
func errPacketFor(seq byte, e []byte) []byte {
	out := append([]byte(nil), e...)
	out[3] = seq
	return out
}

// rawToBackend forwards the remaining client bytes without parsing.
func (c *relayConn) rawToBackend(r *chunkReader) {
	buf := make([]byte, relayBufSize)
	for {
		n, err := r.Read(buf)
		if n > 0 && !c.writeBackend(buf[:n]) {
			return
		}
		if err != nil {
			return
		}
	}
}

// chunkReader reads the chunks produced by readClient as a stream.
type chunkReader struct {
	ch   <-chan []byte
	done <-chan struct{}
	cur  []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		select {
		case b, ok := <-r.ch:
			if !ok {
				return 0, io.EOF
			}
			r.cur = b
		case <-r.done:
			return 0, net.ErrClosed
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}
