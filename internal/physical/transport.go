package physical

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Transport is how lbd carries a node's connections beneath go-sql-driver: TLS and the
// compressed protocol. go-sql-driver would negotiate both itself, and lbd's protocol guard
// would then see only ciphertext or compressed bytes; lbd runs them on the socket instead, so
// go-sql-driver sees a plain connection and the guard reads every packet in the clear. The
// zero value is a plain connection.
type Transport struct {
	// TLS is the node's TLS configuration (its ServerName already the node's own host), nil
	// for none.
	TLS *tls.Config
	// AllowPlain (go-sql-driver's allowFallbackToPlaintext, or tls=preferred) connects in the
	// clear to a server that offers no TLS; without it such a server fails the dial with
	// mysql.ErrNoTLS, as go-sql-driver does.
	AllowPlain bool
	// Compress asks for the compressed protocol (go-sql-driver's compress=true); a server that
	// does not offer it gets a plain connection, as with go-sql-driver.
	Compress bool

	caps      uint32 // the capability flags go-sql-driver announces for this config
	collation byte
	password  string // sent in clear over TLS where the server expects it (login.go)
}

// Capability flags (MySQL's CLIENT_* constants) the transport negotiates or announces.
const (
	clientLongPassword  = 1 << 0
	clientFoundRows     = 1 << 1
	clientLongFlag      = 1 << 2
	clientConnectWithDB = 1 << 3
	clientCompress      = 1 << 5
	clientLocalFiles    = 1 << 7
	clientProtocol41    = 1 << 9
	clientSSL           = 1 << 11
	clientTransactions  = 1 << 13
	clientSecureConn    = 1 << 15
	clientMultiStmts    = 1 << 16
	clientMultiResults  = 1 << 17
	clientPluginAuth    = 1 << 19
	clientConnectAttrs  = 1 << 20
	clientAuthLenenc    = 1 << 21
	clientDeprecateEOF  = 1 << 24
	// MARIADB_CLIENT_CACHE_METADATA, MariaDB's extended capability go-sql-driver asks for.
	clientCacheMetadata = 1 << 4
)

// defaultCollation is go-sql-driver's (utf8mb4_general_ci); the SSL request carries it, and the
// handshake response that follows over TLS carries the configured one.
const defaultCollation = 45

// NewTransport takes TLS and compression out of my, a node's go-sql-driver configuration,
// which it changes in place so that go-sql-driver negotiates neither, and returns the
// Transport that carries them instead.
func NewTransport(my *mysql.Config) (Transport, error) {
	tr := Transport{TLS: my.TLS, AllowPlain: my.AllowFallbackToPlaintext, collation: defaultCollation, password: my.Passwd}
	if tr.TLS != nil {
		tr.TLS = tr.TLS.Clone()
	}
	if _, query, ok := strings.Cut(my.FormatDSN(), "?"); ok {
		// go-sql-driver keeps the compress setting unexported; its DSN form shows it.
		q, err := url.ParseQuery(query)
		if err != nil {
			return Transport{}, fmt.Errorf("lbd: reading go-sql-driver's settings: %w", err)
		}
		tr.Compress = q.Get("compress") == "true"
	}
	// The flags go-sql-driver's initCapabilities announces for this configuration.
	tr.caps = clientLongPassword | clientLongFlag | clientProtocol41 | clientSecureConn | clientTransactions |
		clientAuthLenenc | clientLocalFiles | clientPluginAuth | clientMultiResults | clientConnectAttrs | clientDeprecateEOF
	if my.ClientFoundRows {
		tr.caps |= clientFoundRows
	}
	if my.MultiStatements {
		tr.caps |= clientMultiStmts
	}
	if my.DBName != "" {
		tr.caps |= clientConnectWithDB
	}
	my.TLS, my.TLSConfig, my.AllowFallbackToPlaintext = nil, "", false
	if err := my.Apply(mysql.EnableCompression(false)); err != nil {
		return Transport{}, fmt.Errorf("lbd: %w", err)
	}
	return tr, nil
}

// greetingCaps reads a protocol-10 greeting's capability flags (checkGreeting passed it): the
// lower and upper halves, MariaDB's extended flags, and where the lower half sits in p.
func greetingCaps(p []byte) (caps, ext uint32, at int) {
	at = 1 + strings.IndexByte(string(p[1:]), 0) + 1 + 4 + 8 + 1
	caps = uint32(binary.LittleEndian.Uint16(p[at:]))
	if len(p) > at+2 {
		caps |= uint32(binary.LittleEndian.Uint16(p[at+2+1+2:])) << 16
		ext = binary.LittleEndian.Uint32(p[at+2+1+2+2+1+6:])
	}
	return caps, ext, at
}

// upgrade sets up s's transport after the server's greeting (a whole packet, header included):
// TLS at once (the SSL request, then the TLS handshake, bounded by ctx), compression once the
// login's OK has passed. The greeting go-sql-driver reads no longer offers either, so it asks
// for neither; lbd adds their flags to its handshake response.
func (s *Socket) upgrade(ctx context.Context, greeting []byte, tr Transport) error {
	p := greeting[4:]
	if p[0] == 0xff {
		return nil // an error packet: go-sql-driver reports it
	}
	caps, ext, at := greetingCaps(p)
	s.trackSession(p, caps)
	if tr.TLS != nil {
		switch {
		case caps&clientSSL != 0:
			if err := s.startTLS(ctx, caps, ext, tr); err != nil {
				return err
			}
		case !tr.AllowPlain:
			return mysql.ErrNoTLS
		}
	}
	if tr.Compress && caps&clientCompress != 0 {
		s.zAfterLogin = true
		s.addCaps |= clientCompress
	}
	binary.LittleEndian.PutUint16(p[at:], uint16(caps&^(clientSSL|clientCompress)))
	return nil
}

// startTLS sends the SSL request (MySQL "Protocol::SSLRequest": the client's flags with
// CLIENT_SSL, a maximum packet size, a collation, filler) and runs the TLS handshake.
func (s *Socket) startTLS(ctx context.Context, serverCaps, serverExt uint32, tr Transport) error {
	caps := tr.caps&serverCaps | clientSSL | s.addCaps
	if tr.Compress {
		caps |= clientCompress & serverCaps
	}
	req := make([]byte, 4+32)
	req[0], req[3] = 32, 1
	binary.LittleEndian.PutUint32(req[4:], caps)
	req[12] = tr.collation
	if caps&clientLongPassword == 0 { // MariaDB: its extended flags in the filler's last 4 bytes
		binary.LittleEndian.PutUint32(req[4+28:], clientCacheMetadata&serverExt)
	}
	stop := deadlineFrom(ctx, s.TCPConn)
	defer stop()
	if _, err := s.TCPConn.Write(req); err != nil {
		return fmt.Errorf("lbd: sending the SSL request: %w", dialCause(ctx, err))
	}
	tc := tls.Client(s.TCPConn, tr.TLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("lbd: TLS handshake: %w", dialCause(ctx, err))
	}
	s.conn, s.tlsOn, s.loginShift = tc, true, 1 // the SSL request took number 1
	s.addCaps |= clientSSL
	return nil
}

// deadlineFrom bounds c's reads and writes by ctx (its deadline, and at once when it ends) until
// stop is called.
func deadlineFrom(ctx context.Context, c net.Conn) (stop func()) {
	deadline, _ := ctx.Deadline() // zero when none: no deadline
	c.SetDeadline(deadline)
	after := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	return func() {
		after()
		c.SetDeadline(time.Time{})
	}
}

// dialCause is ctx's error when it ended, else err.
func dialCause(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}
