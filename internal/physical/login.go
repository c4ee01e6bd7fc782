package physical

import (
	"bytes"
	"fmt"
	"io"

	"github.com/lbd-go/lbd/internal/wire"
)

// The login over lbd's TLS. go-sql-driver does not know the connection is encrypted, so it
// authenticates as on a plain one: sha256_password and a full caching_sha2_password
// authentication then ask the server for its RSA key, while a server on a TLS connection
// expects the password itself there (MySQL "caching_sha2_password" and "sha256_password"
// authentication: the password in clear text over a secure transport). lbd gives the server
// what it expects, as go-sql-driver does over its own TLS; go-sql-driver sees an exchange it
// accepts. The login's packets, in both directions, are numbered on by the SSL request and by
// any packet lbd sends in go-sql-driver's place.

// maxLoginPacket bounds a packet of the login lbd reads whole (the guard's bound too).
const maxLoginPacket = 16 << 10

// Auth packets of caching_sha2_password (MySQL's "Caching SHA-2 Pluggable Authentication").
const (
	authMoreData     = 0x01
	fastAuthSuccess  = 0x03
	performFullAuth  = 0x04
	pluginCachingSHA = "caching_sha2_password"
	pluginSHA256     = "sha256_password"
)

// readLoginPacket reads the server's next login packet whole into s.pending, numbered as
// go-sql-driver counts. When the server asks for a full caching_sha2_password authentication,
// lbd sends the password (over TLS, as the server expects) and go-sql-driver is told the fast
// path succeeded: it then waits for the server's OK or ERR, which follows.
func (s *Socket) readLoginPacket() error {
	var h [4]byte
	if _, err := io.ReadFull(s.conn, h[:]); err != nil {
		return err
	}
	size := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
	if size > maxLoginPacket {
		return s.guard.Stop(fmt.Errorf("%w: login packet of %d bytes, more than %d", wire.ErrViolation, size, maxLoginPacket))
	}
	p := make([]byte, 4+size)
	copy(p, h[:])
	if _, err := io.ReadFull(s.conn, p[4:]); err != nil {
		return err
	}
	seq := p[3]
	p[3] -= s.loginShift
	if size == 2 && p[4] == authMoreData && p[5] == performFullAuth && s.guard.Plugin() == pluginCachingSHA {
		if err := s.sendPassword(seq + 1); err != nil {
			return err
		}
		p[5] = fastAuthSuccess
	}
	s.pending = p
	return nil
}

// sendPassword sends the password, NUL-terminated, as the login's packet number seq; from
// then on the server's numbers run one further ahead of go-sql-driver's.
func (s *Socket) sendPassword(seq byte) error {
	pw := s.password
	pkt := append([]byte{byte(len(pw) + 1), byte((len(pw) + 1) >> 8), byte((len(pw) + 1) >> 16), seq}, pw...)
	pkt = append(pkt, 0)
	if _, err := s.conn.Write(pkt); err != nil {
		return err
	}
	s.loginShift++
	return nil
}

// loginWrite returns go-sql-driver's login packet b as the server must see it: numbered on,
// the handshake response announcing lbd's flags, and a sha256_password response holding the
// password rather than a request for the server's key.
func (s *Socket) loginWrite(b []byte) []byte {
	out := append(s.wbuf[:0], b...)
	whole := len(out) >= 4 && len(out) == 4+(int(out[0])|int(out[1])<<8|int(out[2])<<16)
	switch {
	case !s.sentLogin && whole && len(out) >= 4+32:
		caps := uint32(out[4]) | uint32(out[5])<<8 | uint32(out[6])<<16 | uint32(out[7])<<24 | s.addCaps
		out[4], out[5], out[6], out[7] = byte(caps), byte(caps>>8), byte(caps>>16), byte(caps>>24)
		if s.tlsOn {
			out = s.sha256Response(out, caps)
		}
	case s.sentLogin && whole && s.tlsOn && s.guard.Plugin() == pluginSHA256:
		// An auth switch response for sha256_password: its whole payload is the auth data.
		pw := s.password
		out = append(append(out[:4], pw...), 0)
		n := len(out) - 4
		out[0], out[1], out[2] = byte(n), byte(n>>8), byte(n>>16)
	}
	if s.tlsOn {
		s.cliSeq.Walk(out, func(seq *byte) { *seq += s.loginShift })
	}
	s.wbuf = out
	return out
}

// sha256Response puts the password in place of the auth data of a handshake response (whole
// packet out, flags caps) that names sha256_password; others are returned as they are.
func (s *Socket) sha256Response(out []byte, caps uint32) []byte {
	p := out[4:]
	pos := 32
	nul := bytes.IndexByte(p[pos:], 0)
	if nul < 0 {
		return out
	}
	pos += nul + 1 // the user name
	authAt := pos
	var n, size int
	switch {
	case caps&clientAuthLenenc != 0:
		if pos >= len(p) || p[pos] >= 0xfb { // go-sql-driver's responses are short
			return out
		}
		n, size = int(p[pos]), 1
	case caps&clientSecureConn != 0:
		if pos >= len(p) {
			return out
		}
		n, size = int(p[pos]), 1
	default:
		return out
	}
	authEnd := authAt + size + n
	if authEnd > len(p) {
		return out
	}
	pos = authEnd
	if caps&clientConnectWithDB != 0 {
		nul = bytes.IndexByte(p[pos:], 0)
		if nul < 0 {
			return out
		}
		pos += nul + 1
	}
	nul = bytes.IndexByte(p[pos:], 0)
	if nul < 0 || string(p[pos:pos+nul]) != pluginSHA256 {
		return out
	}
	pw := s.password
	if len(pw)+1 >= 0xfb {
		return out // go-sql-driver's own choice stands; the server refuses it with a clear error
	}
	rebuilt := append([]byte(nil), out[:4+authAt]...)
	rebuilt = append(rebuilt, byte(len(pw)+1))
	rebuilt = append(rebuilt, pw...)
	rebuilt = append(rebuilt, 0)
	rebuilt = append(rebuilt, p[authEnd:]...)
	m := len(rebuilt) - 4
	rebuilt[0], rebuilt[1], rebuilt[2] = byte(m), byte(m>>8), byte(m>>16)
	return rebuilt
}
