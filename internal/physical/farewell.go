package physical

import (
	"time"

	"github.com/go-sql-driver/mysql"
)

// A server that closes a session on its own initiative may say why first: MySQL and MariaDB
// send an ERR packet to every session as their shutdown closes it (1053, ER_SERVER_SHUTDOWN),
// MySQL 8.0.24+ sends 4031 (ER_CLIENT_INTERACTION_TIMEOUT) when wait_timeout ends an idle one.
// On a pooled connection nobody reads it: at the next checkout go-sql-driver's liveness check
// finds a byte waiting (it reads that one byte), answers driver.ErrBadConn, and database/sql
// moves on. Farewell reads the rest, so that the Connector learns what the server said.

const (
	// farewellMax bounds what Farewell reads: an ERR packet's header, code, SQLSTATE and the
	// start of its message; the rest is not read.
	farewellMax = 256
	// farewellWait bounds the wait for bytes the liveness check found already waiting.
	farewellWait = 5 * time.Millisecond
)

// farewell returns the server error sent on s while it was idle, once go-sql-driver's liveness
// check has consumed the first byte of its packet; nil when what waits is not an ERR packet.
// It reads at most farewellMax bytes, waits at most farewellWait, and does not pass the bytes
// through the guard (no command is outstanding; the connection is being dropped). The
// connection cannot be used afterwards.
//
// Over lbd's TLS or compression the bytes waiting are a TLS record or a compressed packet, not
// an ERR packet: nothing is read then, so that no chance bytes are taken for a farewell (a
// 1053 would drain a healthy node).
func (s *Socket) farewell() *mysql.MySQLError {
	if s == nil || s.closed.Load() || s.tlsOn || s.z != nil || s.zAfterLogin {
		return nil
	}
	var buf [farewellMax]byte
	s.TCPConn.SetReadDeadline(time.Now().Add(farewellWait))
	n, _ := s.TCPConn.Read(buf[:])
	return parseFarewell(buf[:n])
}

// parseFarewell reads an ERR packet whose first header byte is gone: b holds the two upper
// bytes of the payload length, the sequence number, then the payload (0xff, the error code,
// '#' and the SQLSTATE, the message). It returns nil when b is not that.
func parseFarewell(b []byte) *mysql.MySQLError {
	const head = 3 // length bytes 2 and 3, sequence
	if len(b) < head+3 || b[head] != 0xff {
		return nil
	}
	payload := b[head:]
	e := &mysql.MySQLError{Number: uint16(payload[1]) | uint16(payload[2])<<8}
	rest := payload[3:]
	if len(rest) >= 6 && rest[0] == '#' {
		copy(e.SQLState[:], rest[1:6])
		rest = rest[6:]
	}
	e.Message = string(rest)
	return e
}
