// Package mysqlfake is a small scripted MySQL-protocol server for lbd's tests: a healthy server
// that answers pings, simple queries and prepared statements, and a catalogue of faults that
// make it a hostile one at any phase of the exchange (before the greeting, in the greeting, in
// the auth exchange, in every segment of a result set, in OK/ERR answers), by sending other
// bytes and then stalling, closing or resetting. It is written from the MySQL Client/Server
// Protocol documentation (handshake v10, OK/ERR/EOF packets, text and binary result sets) and
// needs no SQL engine. It is not for users.
package mysqlfake

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Defaults of Config's timeouts.
const (
	DefaultIOTimeout    = 5 * time.Second  // one packet read once started, one write
	DefaultIdleTimeout  = 60 * time.Second // waiting for the next command
	DefaultStallTimeout = 60 * time.Second // how long a Stall fault holds a connection
)

// maxCommand bounds a client packet the fake reads; lbd's tests send small ones.
const maxCommand = 1 << 20

// Result is a query's answer: column names and rows of text values. A nil *Result answers OK,
// and so does a Result with no Columns and no Err.
type Result struct {
	Columns []string
	Rows    [][]string
	// Err, when set, answers this ERR packet in place of the result.
	Err *Error
	// Next, when set, is the answer to the text's next statement (a multi-statement text): this
	// result ends with SERVER_MORE_RESULTS_EXISTS and Next follows it in the same answer. A
	// result with Err ends the answer, as a server stops at a failed statement.
	Next *Result
	// Session, when set and the client negotiated session tracking (Config.SessionTrack), is
	// the session-state block (its entries, as the protocol writes them) of the OK packet that
	// ends this result: the fake sends it with SERVER_SESSION_STATE_CHANGED, after an empty
	// info, framed but otherwise as it is.
	Session []byte
}

// Error is a server error: number, SQLSTATE and message.
type Error struct {
	Number  uint16
	State   string
	Message string
}

// Config sets up a Server. The zero value accepts any user and password, sends EOF packets
// (no CLIENT_DEPRECATE_EOF) and answers queries with DefaultAnswer.
type Config struct {
	// User and Password, when User is set, are the only credentials accepted
	// (mysql_native_password); others get ERR 1045. An empty User accepts anyone.
	User, Password string
	// DeprecateEOF announces CLIENT_DEPRECATE_EOF: no EOF after column definitions and an OK
	// packet (0xfe header) at the end of rows.
	DeprecateEOF bool
	// Answer answers COM_QUERY and executed prepared statements (their text with each ? replaced
	// by its argument); nil means DefaultAnswer.
	Answer func(query string) *Result
	// IOTimeout bounds each write and each packet read once started (default 5 s).
	IOTimeout time.Duration
	// IdleTimeout bounds the wait for a client's next command (default 60 s).
	IdleTimeout time.Duration
	// StallTimeout bounds how long a Stall fault holds a connection open (default 60 s).
	StallTimeout time.Duration
	// TLS, when set, announces CLIENT_SSL and serves a client's SSL request with this
	// configuration; the login and everything after it then run over TLS.
	TLS *tls.Config
	// Compress announces CLIENT_COMPRESS; a client that asks for it gets the compressed
	// protocol from the login's OK on.
	Compress bool
	// Plugin is the auth plugin the greeting names: mysql_native_password when empty,
	// caching_sha2_password (every login takes the full authentication: the server asks for
	// the password, which it accepts in clear over TLS only) or sha256_password (the password in
	// clear in the handshake response, over TLS only).
	Plugin string
	// SessionTrack announces CLIENT_SESSION_TRACK; a client that asks for it gets each
	// Result's Session in its OK packets.
	SessionTrack bool
}

// Server is a running fake MySQL server on 127.0.0.1. Its methods are safe for concurrent use.
type Server struct {
	cfg Config
	ln  net.Listener

	mu     sync.Mutex
	faults []*Fault
	conns  map[net.Conn]struct{}
	closed bool

	accepted atomic.Int64
	open     atomic.Int64
	commands atomic.Int64
	tlsConns atomic.Int64
	zConns   atomic.Int64
	wg       sync.WaitGroup
}

// New starts a Server on 127.0.0.1:0; Close stops it.
func New(cfg Config) (*Server, error) {
	if cfg.IOTimeout <= 0 {
		cfg.IOTimeout = DefaultIOTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	if cfg.Answer == nil {
		cfg.Answer = DefaultAnswer
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("mysqlfake: listen: %w", err)
	}
	s := &Server{cfg: cfg, ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Start is New for a test: it fails t on error and closes the server when the test ends.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Addr returns the server's "127.0.0.1:port".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Accepted returns how many connections the server has accepted.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// Open returns how many connections are open on the server's side. A connection the client
// closed counts as open until the server has read its EOF (at once when it waits for a command
// or stalls).
func (s *Server) Open() int { return int(s.open.Load()) }

// Commands returns how many commands the server has read, over every connection. COM_QUIT is
// not one: a client sends it while closing, so counting it would let a test that asks "did
// anything reach the server" race the close of a connection it retired just before.
func (s *Server) Commands() int64 { return s.commands.Load() }

// TLSConns returns how many connections switched to TLS.
func (s *Server) TLSConns() int64 { return s.tlsConns.Load() }

// CompressedConns returns how many connections switched to the compressed protocol.
func (s *Server) CompressedConns() int64 { return s.zConns.Load() }

// AddFault arms f; the first armed fault that applies at a phase fires. The returned function
// disarms it.
func (s *Server) AddFault(f Fault) (remove func()) {
	fp := &f
	s.mu.Lock()
	s.faults = append(s.faults, fp)
	s.mu.Unlock()
	return func() { s.removeFault(fp) }
}

// ClearFaults disarms every fault: the server is healthy again for new phases.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// AnswerNext answers the next command (of any connection) with exactly b, then carries on
// reading commands: the raw mode the fuzz target uses.
func (s *Server) AnswerNext(b []byte) {
	s.AddFault(Fault{Name: "command/raw", Phase: PhaseCommand, Bytes: Raw(b), Times: 1})
}

func (s *Server) removeFault(fp *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f == fp {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			return
		}
	}
}

// armed reports whether a fault applies to any segment of c's answer, without firing it.
func (s *Server) armed(c Command, segs []segment) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.faults {
		for _, seg := range segs {
			if f.applies(seg.phase, c) {
				return true
			}
		}
	}
	return false
}

// fault returns the first armed fault for this phase and command, spending one of its Times.
func (s *Server) fault(ph Phase, c Command) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if !f.applies(ph, c) {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return f
	}
	return nil
}

// Close stops the listener, closes every connection and waits for the server's goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.open.Add(1)
		n := int(s.accepted.Add(1))
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(nc, n)
	}
}

func (s *Server) serve(nc net.Conn, n int) {
	defer s.wg.Done()
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.conns, nc)
		s.mu.Unlock()
		s.open.Add(-1)
	}()
	c := &conn{srv: s, nc: nc, under: nc, raw: nc, n: n, stmts: map[uint32]*stmt{}}
	c.run()
}
