package lbdtest

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MaxQueries is the number of most recent statement texts a Proxy keeps
// for Queries.
const MaxQueries = 10000

// restartWait bounds how long Proxy.Start keeps retrying when its port is
// momentarily taken.
const restartWait = 3 * time.Second

// Proxy is one member of a Cluster: a TCP relay on its own 127.0.0.1 port
// in front of the shared backend, with fault controls and counters. All
// methods are safe for concurrent use.
type Proxy struct {
	addr        string
	backendNet  string
	backendAddr string
	log         *slog.Logger

	life sync.Mutex // serialises Start, Stop and shutdown

	mu     sync.Mutex // guards ln, conns and closed
	ln     net.Listener
	conns  map[*relayConn]struct{}
	closed bool
	wg     sync.WaitGroup // accept loop and every relay goroutine

	gate    *gate
	latency atomic.Int64 // nanoseconds
	fail    failState
	role    atomic.Int32 // a Role
	refused atomic.Int64 // statements refused because of the role
	// stopping: the proxy announces its shutdown (AnnounceShutdown) until the next Start.
	stopping   atomic.Bool
	turnedAway atomic.Int64 // connections answered ER_SERVER_SHUTDOWN in place of a greeting
	// failText is the fault FailQueries set; nil when none.
	failText atomic.Pointer[textFault]
	// delayText is the delay DelayQueries set; nil when none.
	delayText atomic.Pointer[textDelay]
	// lag is the replication lag SetReplicationLag set, as a *time.Duration; nil: not set.
	lag atomic.Pointer[time.Duration]

	open  atomic.Int64
	total atomic.Int64
	stmts atomic.Int64

	qmu     sync.Mutex
	queries []string         // ring buffer of at most MaxQueries texts
	qnext   int              // index of the oldest entry once the ring is full
	logins  map[string]int64 // logins per user name (Logins); guarded by qmu
}

// newProxy starts a proxy on a fresh loopback port relaying to b.
func newProxy(b *backend, log *slog.Logger) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lbdtest: proxy listen: %w", err)
	}
	p := &Proxy{
		addr:        ln.Addr().String(),
		backendNet:  b.network,
		backendAddr: b.addr,
		log:         log,
		conns:       make(map[*relayConn]struct{}),
		gate:        newGate(),
	}
	p.serveListener(ln)
	return p, nil
}

// Addr returns the proxy's "127.0.0.1:port" address. It never changes,
// also across Stop and Start.
func (p *Proxy) Addr() string { return p.addr }

// Start makes a stopped proxy listen again on its address. If the port is
// momentarily taken it retries for up to 3 seconds before giving up with
// the listen error. Start on a running proxy does nothing and returns nil;
// after Cluster.Close it returns ErrClosed.
func (p *Proxy) Start() error {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	closed, running := p.closed, p.ln != nil
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if running {
		return nil
	}
	p.stopping.Store(false) // a server started again is a new process
	deadline := time.Now().Add(restartWait)
	for {
		ln, err := net.Listen("tcp", p.addr)
		if err == nil {
			p.serveListener(ln)
			p.log.Debug("lbdtest: proxy started", "proxy", p.addr)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lbdtest: restart proxy: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop closes the proxy's listener and every client connection through it
// (clients see EOF or a reset), then waits for its goroutines to finish.
// New connection attempts are refused until Start. Stop works while the
// proxy is hung, and on a stopped proxy it does nothing and returns nil.
// Hang, latency and pending failures stay configured across Stop/Start.
func (p *Proxy) Stop() error {
	p.life.Lock()
	defer p.life.Unlock()
	return p.stopLocked()
}

// shutdown stops the proxy for good; Start fails afterwards.
func (p *Proxy) shutdown() error {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.stopLocked()
}

func (p *Proxy) stopLocked() error {
	p.mu.Lock()
	ln := p.ln
	p.ln = nil
	conns := make([]*relayConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	if ln == nil {
		return nil
	}
	err := ln.Close()
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
	p.log.Debug("lbdtest: proxy stopped", "proxy", p.addr)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Running reports whether the proxy is listening (started and not
// stopped).
func (p *Proxy) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ln != nil
}

// Hang freezes the proxy: TCP connections are still accepted, but no byte
// flows in either direction, so new connections never see the server
// handshake and existing ones stall mid-stream. Bytes already read from
// either side are held, not dropped. A client that disconnects while hung
// is noticed and its connection closed. Hang on a hung proxy does nothing.
func (p *Proxy) Hang() {
	p.gate.hang()
	p.log.Debug("lbdtest: proxy hung", "proxy", p.addr)
}

// Resume undoes Hang: held bytes flow again and new connections proceed.
// Resume on a proxy that is not hung does nothing.
func (p *Proxy) Resume() {
	p.gate.release()
	p.log.Debug("lbdtest: proxy resumed", "proxy", p.addr)
}

// Hung reports whether the proxy is currently hung.
func (p *Proxy) Hung() bool { return p.gate.hung() }

// SetLatency delays every statement (COM_QUERY, COM_STMT_PREPARE,
// COM_STMT_EXECUTE) by d before it is forwarded or answered with an
// injected error. Zero or negative d removes the delay. It applies to
// statements read after the call.
func (p *Proxy) SetLatency(d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.latency.Store(int64(d))
}

// Latency returns the delay set by SetLatency (0 when none).
func (p *Proxy) Latency() time.Duration { return time.Duration(p.latency.Load()) }

// FailNext makes the proxy answer the next n statements, on any of its
// connections, with a MySQL ERR packet carrying err instead of forwarding
// them. The connection stays usable afterwards. n < 0 fails every
// statement until FailNext(0, nil); n == 0 cancels pending failures. A nil
// err with n != 0 uses error 1105 (SQLSTATE HY000). A zero SQLState is sent
// as HY000. err is copied; later changes to it have no effect.
//
// Each call replaces the previous setting; statements already being
// delayed by SetLatency take their decision after the delay.
func (p *Proxy) FailNext(n int, err *mysql.MySQLError) {
	p.fail.set(n, err)
}

// ShutdownError is the error a proxy answers while it announces its shutdown (AnnounceShutdown):
// MySQL's ER_SERVER_SHUTDOWN, 1053, SQLSTATE 08S01, "Server shutdown in progress".
var ShutdownError = mysql.MySQLError{Number: 1053, SQLState: [5]byte{'0', '8', 'S', '0', '1'}, Message: "Server shutdown in progress"}

// AnnounceShutdown makes the proxy behave as a MySQL server whose shutdown has begun: every new
// connection is answered with ShutdownError in place of the greeting and closed, and every
// statement, on any connection, is answered with ShutdownError without being forwarded (it
// does not run). Connections stay open. Stop then closes them, as the server does when its
// shutdown ends; the next Start serves normally again. Pending FailNext failures are taken
// first.
func (p *Proxy) AnnounceShutdown() {
	p.stopping.Store(true)
	p.log.Debug("lbdtest: proxy announces its shutdown", "proxy", p.addr)
}

// StopWithShutdownError stops the proxy as a MySQL server ends its shutdown: every client
// connection first receives an ERR packet carrying ShutdownError (a session idle in a pool
// finds it waiting at its next use), then the proxy stops as Stop does. A write that the client
// does not take within 100 ms is given up.
func (p *Proxy) StopWithShutdownError() error {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	conns := make([]*relayConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	e := ShutdownError
	pkt := errPacket(0, &e)
	for _, c := range conns {
		c.writeMu.Lock()
		_ = c.client.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.client.Write(pkt)
		c.writeMu.Unlock()
	}
	return p.stopLocked()
}

// ShuttingDown reports whether the proxy announces its shutdown (see AnnounceShutdown).
func (p *Proxy) ShuttingDown() bool { return p.stopping.Load() }

// TurnedAway returns how many connections the proxy answered with ShutdownError in place of the
// greeting while it announced its shutdown, since it was created.
func (p *Proxy) TurnedAway() int64 { return p.turnedAway.Load() }

// textFault fails the statements whose text starts with prefix.
type textFault struct {
	prefix []byte
	err    mysql.MySQLError
}

// FailQueries makes the proxy answer every statement whose SQL text (COM_QUERY or
// COM_STMT_PREPARE) starts with prefix with a MySQL ERR packet carrying err, on any connection,
// instead of forwarding it, until FailQueries("", nil); other statements are served. lbd's
// probes, for instance, start with "/* ping */", so FailQueries("/* ping */", nil) fails a
// proxy's probes while it serves the application. A nil err uses error 1105 (SQLSTATE HY000).
// FailNext's pending failures are taken first.
//
// An injected failure is answered at once, so a statement a client pipelines behind others on
// the same connection (sent before their answers came) may be answered out of order: inject
// failures into statements sent on their own.
func (p *Proxy) FailQueries(prefix string, err *mysql.MySQLError) {
	if prefix == "" {
		p.failText.Store(nil)
		return
	}
	f := &textFault{prefix: []byte(prefix)}
	if err == nil {
		f.err = mysql.MySQLError{Number: 1105, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "lbdtest: injected failure"}
	} else {
		f.err = *err
	}
	p.failText.Store(f)
}

// textDelay delays the statements whose text starts with prefix by d.
type textDelay struct {
	prefix []byte
	d      time.Duration
}

// DelayQueries delays every statement whose SQL text (COM_QUERY or COM_STMT_PREPARE) starts
// with prefix by d before it is forwarded or answered with an injected error, on any
// connection, until DelayQueries("", 0); other statements are served without it. The delay adds
// to SetLatency's. lbd's probes, for instance, start with "/* ping */", so
// DelayQueries("/* ping */", 10*time.Second) makes a proxy's probes time out while it serves
// the application. Zero or negative d, or an empty prefix, removes the delay. It applies to
// statements read after the call.
func (p *Proxy) DelayQueries(prefix string, d time.Duration) {
	if prefix == "" || d <= 0 {
		p.delayText.Store(nil)
		return
	}
	p.delayText.Store(&textDelay{prefix: []byte(prefix), d: d})
}

// OpenConns returns the number of client connections currently open
// through the proxy.
func (p *Proxy) OpenConns() int { return int(p.open.Load()) }

// TotalConns returns the number of client connections the proxy has
// accepted since it was created or since ResetCounters.
func (p *Proxy) TotalConns() int64 { return p.total.Load() }

// Statements returns the number of statements (COM_QUERY,
// COM_STMT_PREPARE, COM_STMT_EXECUTE) the proxy has seen, forwarded or
// failed, since it was created or since ResetCounters.
func (p *Proxy) Statements() int64 { return p.stmts.Load() }

// Queries returns a copy of the SQL text of the most recent statements
// that carry text (COM_QUERY and COM_STMT_PREPARE), oldest first. At most
// MaxQueries texts are kept; a text longer than 64 KiB is truncated.
func (p *Proxy) Queries() []string {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	out := make([]string, 0, len(p.queries))
	out = append(out, p.queries[p.qnext:]...)
	return append(out, p.queries[:p.qnext]...)
}

// Logins returns how many logins the proxy has relayed per user name since
// it was created or since ResetCounters: the user of each client's
// handshake response. A connection that sent none (it closed first) is not
// counted, nor one that went encrypted or compressed from its first packet
// (TLS), whose user the proxy cannot read. At most MaxLoginUsers names are
// kept apart; logins under further names are counted under "…".
func (p *Proxy) Logins() map[string]int64 {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return maps.Clone(p.logins)
}

// MaxLoginUsers is how many distinct user names Logins keeps apart.
const MaxLoginUsers = 64

// noteLogin counts a login by user.
func (p *Proxy) noteLogin(user string) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	if p.logins == nil {
		p.logins = make(map[string]int64)
	}
	if _, ok := p.logins[user]; !ok && len(p.logins) >= MaxLoginUsers {
		user = "…"
	}
	p.logins[user]++
}

// ResetCounters sets TotalConns and Statements to zero and empties
// Queries and Logins. OpenConns, a gauge, is not affected.
func (p *Proxy) ResetCounters() {
	p.qmu.Lock()
	p.queries = nil
	p.qnext = 0
	p.logins = nil
	p.total.Store(0)
	p.stmts.Store(0)
	p.qmu.Unlock()
}

// noteStatement counts a statement and records its text, if any.
func (p *Proxy) noteStatement(text []byte, hasText bool) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	p.stmts.Add(1)
	if !hasText {
		return
	}
	if len(text) > maxRecordedQuery {
		text = text[:maxRecordedQuery]
	}
	s := string(text)
	if len(p.queries) < MaxQueries {
		p.queries = append(p.queries, s)
		return
	}
	p.queries[p.qnext] = s
	p.qnext = (p.qnext + 1) % MaxQueries
}

// serveListener makes ln the proxy's listener and starts accepting on it.
func (p *Proxy) serveListener(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.wg.Add(1)
	p.mu.Unlock()
	go p.acceptLoop(ln)
}

func (p *Proxy) acceptLoop(ln net.Listener) {
	defer p.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary trouble such as running out of descriptors.
			p.log.Warn("lbdtest: accept failed", "proxy", p.addr, "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		c := newRelayConn(p, conn)
		p.mu.Lock()
		if p.ln != ln {
			p.mu.Unlock()
			_ = conn.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.open.Add(1)
		p.total.Add(1)
		p.wg.Add(1)
		p.mu.Unlock()
		p.log.Debug("lbdtest: connection accepted", "proxy", p.addr, "client", conn.RemoteAddr().String())
		go c.serve()
	}
}

// connClosed forgets a torn-down connection.
func (p *Proxy) connClosed(c *relayConn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	p.open.Add(-1)
	p.log.Debug("lbdtest: connection closed", "proxy", p.addr)
}

// failState holds the pending injected failures of a proxy.
type failState struct {
	mu        sync.Mutex
	remaining int // < 0 means unlimited
	err       mysql.MySQLError
}

func (f *failState) set(n int, err *mysql.MySQLError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remaining = n
	switch {
	case n == 0:
		f.err = mysql.MySQLError{}
	case err == nil:
		f.err = mysql.MySQLError{Number: 1105, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "lbdtest: injected failure"}
	default:
		f.err = *err
	}
}

// take consumes one pending failure and returns its error, or nil when
// the statement should be forwarded.
func (f *failState) take() *mysql.MySQLError {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.remaining == 0 {
		return nil
	}
	if f.remaining > 0 {
		f.remaining--
	}
	e := f.err
	return &e
}
