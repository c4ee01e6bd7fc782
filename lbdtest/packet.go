package lbdtest

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/go-sql-driver/mysql"
)

// Wire-protocol constants used by the relay.
const (
	headerLen     = 4        // 3-byte payload length + 1-byte sequence id
	maxPayloadLen = 0xffffff // a payload of this size is continued in the next packet

	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17

	// Capability flags (low 16 bits of the client's handshake response).
	capCompress   = 0x0020
	capSSL        = 0x0800
	capProtocol41 = 0x0200
)

// maxRecordedQuery caps the SQL text kept per statement by Proxy.Queries,
// in bytes.
const maxRecordedQuery = 64 << 10

// packet is one complete wire packet: header followed by payload.
type packet []byte

func (p packet) payloadLen() int { return int(p[0]) | int(p[1])<<8 | int(p[2])<<16 }
func (p packet) seq() byte       { return p[3] }
func (p packet) payload() []byte { return p[headerLen:] }

// command returns the command byte of a packet that starts a command, or
// -1 if the payload is empty.
func (p packet) command() int {
	if len(p) <= headerLen {
		return -1
	}
	return int(p[headerLen])
}

// isStatement reports whether cmd is one of the commands the proxy counts
// as a statement.
func isStatement(cmd int) bool {
	return cmd == comQuery || cmd == comStmtPrepare || cmd == comStmtExecute
}

// hasText reports whether the payload of cmd after the command byte is SQL
// text.
func hasText(cmd int) bool {
	return cmd == comQuery || cmd == comStmtPrepare
}

// readPacket reads one complete packet from r into buf (reusing its
// storage when large enough) and returns it.
func readPacket(r io.Reader, buf []byte) (packet, error) {
	if cap(buf) < headerLen {
		buf = make([]byte, headerLen, 512)
	}
	buf = buf[:headerLen]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	n := packet(buf).payloadLen()
	total := headerLen + n
	if cap(buf) < total {
		grown := make([]byte, total)
		copy(grown, buf)
		buf = grown
	}
	buf = buf[:total]
	if _, err := io.ReadFull(r, buf[headerLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return packet(buf), nil
}

// clientCapabilities returns the low 16 capability bits of the client's
// first packet (handshake response or SSL request), or 0 when too short.
func clientCapabilities(p packet) uint16 {
	pl := p.payload()
	if len(pl) < 2 {
		return 0
	}
	return binary.LittleEndian.Uint16(pl)
}

// loginUser returns the user name of a client's handshake response (the
// 4.1 protocol's, which go-sql-driver sends), and false when p is none or
// is cut short. The name is at most maxLoginUser bytes; a longer one is cut.
func loginUser(p packet) (string, bool) {
	pl := p.payload()
	// capabilities (4), max packet size (4), character set (1), filler (23)
	const header = 32
	if len(pl) <= header || binary.LittleEndian.Uint32(pl)&capProtocol41 == 0 {
		return "", false
	}
	name := pl[header:]
	end := bytes.IndexByte(name, 0)
	if end < 0 {
		return "", false
	}
	return string(name[:min(end, maxLoginUser)]), true
}

// maxLoginUser bounds the user names Logins records.
const maxLoginUser = 64

// errPacket encodes a MySQL ERR packet carrying e with sequence id seq.
func errPacket(seq byte, e *mysql.MySQLError) []byte {
	msg := e.Message
	// 1 (0xff) + 2 (code) + 1 ('#') + 5 (state) + message
	n := 9 + len(msg)
	if n > maxPayloadLen-1 {
		msg = msg[:maxPayloadLen-1-9]
		n = 9 + len(msg)
	}
	b := make([]byte, 0, headerLen+n)
	b = append(b, byte(n), byte(n>>8), byte(n>>16), seq)
	b = append(b, 0xff)
	b = binary.LittleEndian.AppendUint16(b, e.Number)
	b = append(b, '#')
	state := e.SQLState
	if state == ([5]byte{}) {
		state = [5]byte{'H', 'Y', '0', '0', '0'}
	}
	b = append(b, state[:]...)
	b = append(b, msg...)
	return b
}
