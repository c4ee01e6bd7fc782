// Package wire checks the MySQL client/server protocol as it passes through a connection, so
// that a proxy sending malformed packets is stopped before go-sql-driver parses them.
//
// go-sql-driver (v1.10.1) trusts the server: it indexes into OK, ERR and EOF packets, column
// definitions and rows without checking their length, and allocates for the column count a
// result header announces. A Guard sits on the net.Conn beneath it, follows the packet framing
// in both directions and the response structure of each command, and fails the read that would
// complete a packet go-sql-driver cannot parse safely. go-sql-driver then sees a read error,
// closes the connection and returns; it never sees the packet.
//
// What is checked, from the MySQL "Client/Server Protocol" documentation:
//   - framing: a logical packet (max-size fragments joined) is at most Limits.MaxPacket bytes;
//   - the auth exchange: OK, ERR, auth switch (with enough scramble for the plugin) and auth
//     more data (a public key must be an RSA key in PEM);
//   - every response: OK, ERR and EOF packets carry each field go-sql-driver reads, a result
//     header's column count is complete and at most Limits.MaxColumns, column definitions
//     carry their six strings and fixed fields, text rows carry one complete value per column,
//     binary rows their NULL bitmap, and a prepare answer its counts;
//   - nothing arrives while no command is outstanding;
//   - with session tracking (TrackSession), the session-state block of every OK packet: its
//     framing, its bounds (MaxSessionOK) and, through the sink, its values (session.go).
//
// The Guard must see plain packets: lbd runs TLS and the compressed protocol (Compression)
// beneath go-sql-driver, and the Guard sits above them. Should a client negotiate either
// itself through the Guard, the bytes that follow are no longer plain packets and the Guard
// stops checking (Opaque reports it).
package wire

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
)

// Protocol limits.
const (
	// MaxFragment is the largest payload of one packet; a fragment this long is continued by
	// the next one.
	MaxFragment = 1<<24 - 1
	// DefaultMaxPacket bounds a logical packet: 1 GiB is the largest max_allowed_packet MySQL
	// and MariaDB accept, so no server sends more in one packet.
	DefaultMaxPacket = 1 << 30
	// DefaultMaxColumns bounds the columns of one result. MySQL allows 4096 columns per table
	// and 61 tables per join, so the widest SELECT * reaches 249 856; MariaDB returns 70 000
	// expressions for a wide SELECT 1,2,… . go-sql-driver allocates about 48 bytes per announced
	// column before the first definition arrives, so this bound caps that at 12 MiB a result.
	DefaultMaxColumns = 1 << 18
	// maxAuthPacket bounds one packet of the auth exchange, which the Guard keeps whole to
	// check it (a public key in PEM is under 1 KiB).
	maxAuthPacket = 16 << 10
)

// Capability flags (MySQL's CLIENT_* constants) the Guard needs to follow a connection.
const (
	clientMySQL        = 1 << 0 // CLIENT_LONG_PASSWORD; MariaDB clears it to use extended capabilities
	clientCompress     = 1 << 5
	clientSSL          = 1 << 11
	clientDeprecateEOF = 1 << 24
	// MariaDB extended capability MARIADB_CLIENT_CACHE_METADATA: result headers carry a
	// "metadata follows" byte and binary results may omit their column definitions.
	clientCacheMetadata = 1 << 4

	statusInTrans     = 0x0001 // SERVER_STATUS_IN_TRANS
	statusAutocommit  = 0x0002 // SERVER_STATUS_AUTOCOMMIT
	statusMoreResults = 0x0008 // SERVER_MORE_RESULTS_EXISTS
	statusInTransRO   = 0x2000 // SERVER_STATUS_IN_TRANS_READONLY
)

// Command bytes whose answers differ from a plain OK/ERR.
const (
	comQuit        = 0x01
	comQuery       = 0x03
	comStmtPrepare = 0x16
	comStmtExecute = 0x17
	comStmtLong    = 0x18 // COM_STMT_SEND_LONG_DATA: no answer
	comStmtClose   = 0x19 // no answer
)

// Limits bounds what a peer may announce. Zero fields take the defaults.
type Limits struct {
	MaxPacket  int // bytes in one logical packet; default DefaultMaxPacket
	MaxColumns int // columns in one result; default DefaultMaxColumns
}

// ErrViolation is wrapped by every error a Guard returns.
var ErrViolation = errors.New("protocol violation")

type phase uint8

const (
	phaseGreeting phase = iota // the server's greeting (checked by the dialer), not yet passed on
	phaseAuth                  // the auth exchange, until its OK or ERR
	phaseIdle                  // no command outstanding: the server must be silent
	phaseHeader                // a response's first packet, or the next result's header
	phaseDefs                  // column (or parameter) definitions; left to come
	phaseDefsEOF               // the EOF after definitions, without DEPRECATE_EOF
	phaseRows                  // rows until EOF, OK or ERR
	phasePrepare               // the first packet of a COM_STMT_PREPARE answer
	phaseOpaque                // TLS or compression: no longer plain packets
)

// afterDefs says what follows the definitions being read.
type afterDefs uint8

const (
	defsThenRows     afterDefs = iota // a result set
	defsThenPrepCols                  // a prepare's parameters, then its columns
	defsThenIdle                      // a prepare's columns
)

// prefixLen is how much of each packet the Guard keeps: enough for every fixed field of an OK,
// ERR, EOF, result header or prepare answer.
const prefixLen = 32

// frame follows the packet framing of one direction.
type frame struct {
	hdr    [4]byte
	hdrN   int  // header bytes of the current fragment seen so far
	remain int  // payload bytes of the current fragment still to come
	cont   bool // the current fragment continues a logical packet
	inBody bool // a fragment header is complete and its payload is being read
	seq    byte // sequence number of the logical packet's first fragment
	total  int  // payload bytes of the logical packet so far
	prefix [prefixLen]byte
	prefN  int
}

// Guard follows one connection. The zero value is not ready: call Init. Client and Server must
// be called in the order the bytes pass (go-sql-driver uses a connection from one goroutine at
// a time); once one returns an error, every later call returns it too.
type Guard struct {
	lim Limits
	err error

	caps, extCaps     uint32
	compressAfterAuth bool

	srv, cli frame
	phase    phase
	binary   bool // the current command's rows use the binary protocol
	cols     int  // columns of the current result
	left     int  // definitions still to come
	after    afterDefs
	prepCols int // a prepare's columns, read after its parameters

	// answered: the answer to the latest command began with something other than an ERR
	// packet (an OK, a result, a LOCAL INFILE request), so an error that follows in the same
	// answer came after some of the command's work.
	answered bool

	// status is the server's status flags from the latest OK or EOF packet (statusKnown once
	// one passed); cmdStatus is status as the latest command began, before its answer.
	status, cmdStatus           uint16
	statusKnown, cmdStatusKnown bool

	walk   walker
	auth   []byte // the greeting or auth packet being collected
	plugin string // the auth plugin in use: the greeting's, then an auth switch's

	// Session tracking (session.go): sink, when set, is told every OK packet's session state;
	// ok collects the packet that may be one (collect), at most MaxSessionOK bytes of it
	// (okOver: there was more).
	sink    SessionSink
	ok      []byte
	collect bool
	okOver  bool
}

// Init readies g with lim.
func (g *Guard) Init(lim Limits) {
	if lim.MaxPacket <= 0 {
		lim.MaxPacket = DefaultMaxPacket
	}
	if lim.MaxColumns <= 0 {
		lim.MaxColumns = DefaultMaxColumns
	}
	*g = Guard{lim: lim}
}

// Err returns the violation found, or nil.
func (g *Guard) Err() error { return g.err }

// Stop records err, a violation found beneath the packets (in the compressed protocol's
// framing), as the Guard's own, and returns the Guard's error.
func (g *Guard) Stop(err error) error {
	if g.err == nil {
		g.err = err
	}
	return g.err
}

// Plugin returns the auth plugin the login uses so far: the greeting's, then an auth switch's
// (mysql_native_password when the greeting names none).
func (g *Guard) Plugin() string { return g.plugin }

// Opaque reports whether the connection switched to TLS or compression, so nothing more is
// checked.
func (g *Guard) Opaque() bool { return g.phase == phaseOpaque }

func (g *Guard) fail(format string, args ...any) error {
	if g.err == nil {
		g.err = fmt.Errorf("%w: "+format, append([]any{ErrViolation}, args...)...)
	}
	return g.err
}

// Client observes bytes the client wrote.
func (g *Guard) Client(p []byte) {
	if g.err != nil || g.phase == phaseOpaque {
		return
	}
	f := &g.cli
	for len(p) > 0 && g.phase != phaseOpaque {
		if !f.inBody {
			p = g.header(f, p, false)
			if f.inBody && f.remain == 0 {
				g.clientPacketEnd()
			}
			continue
		}
		n := min(f.remain, len(p))
		if !f.cont && f.seq == 0 && f.prefN == 0 && n > 0 && g.phase != phaseAuth {
			g.command(p[0])
		}
		f.keep(p[:n])
		f.remain -= n
		p = p[n:]
		if f.remain == 0 {
			g.clientPacketEnd()
		}
	}
}

// clientPacketEnd finishes a client fragment; the handshake response reveals the negotiated
// capabilities.
func (g *Guard) clientPacketEnd() {
	f := &g.cli
	f.inBody = false
	if f.hdrLen() == MaxFragment {
		f.cont = true
		return
	}
	if g.phase == phaseAuth && f.seq == 1 && f.prefN >= 32 {
		g.caps = binary.LittleEndian.Uint32(f.prefix[0:4])
		if g.caps&clientMySQL == 0 {
			g.extCaps = binary.LittleEndian.Uint32(f.prefix[28:32])
		}
		if g.caps&clientSSL != 0 {
			g.phase = phaseOpaque // the SSL request; TLS follows
		}
		g.compressAfterAuth = g.caps&clientCompress != 0
	}
	f.cont = false
}

// Answered reports whether the answer to the latest command began with anything but an ERR
// packet. An ERR that the server sent first proves it ran none of a multi-statement text (the
// server stops at the first failing statement); after an OK or a result, some of it ran. It is
// meaningful only while the connection is not Opaque.
func (g *Guard) Answered() bool { return g.answered }

// Idle reports whether no answer is outstanding: the whole answer to the latest command has
// passed (and no command is being sent).
func (g *Guard) Idle() bool { return g.phase == phaseIdle }

// Autocommitted reports whether the server's own status flags, in the last OK or EOF packet
// before the latest command, said autocommit was on and no transaction was open: the command
// ran, if it ran, as a transaction of its own. It is false when no such packet passed, and
// meaningful only while the connection is not Opaque. An ERR packet carries no flags; a
// failed statement leaves the flags of the one before it, which is right: a statement that
// failed did not open a transaction.
func (g *Guard) Autocommitted() bool {
	return g.cmdStatusKnown && g.cmdStatus&statusAutocommit != 0 && g.cmdStatus&statusInTrans == 0
}

// ReadOnlyTx reports whether the server's status flags, in the last OK or EOF packet before the
// latest command, said a read-only transaction was open (SERVER_STATUS_IN_TRANS_READONLY, which
// MySQL and MariaDB set inside START TRANSACTION READ ONLY). False when no such packet passed;
// meaningful only while the connection is not Opaque.
func (g *Guard) ReadOnlyTx() bool {
	return g.cmdStatusKnown && g.cmdStatus&statusInTrans != 0 && g.cmdStatus&statusInTransRO != 0
}

// command sets up for the answer to the command byte c.
func (g *Guard) command(c byte) {
	g.binary, g.answered = false, false
	g.cmdStatus, g.cmdStatusKnown = g.status, g.statusKnown
	switch c {
	case comQuit, comStmtClose, comStmtLong:
		g.phase = phaseIdle
	case comStmtPrepare:
		g.phase = phasePrepare
	case comStmtExecute:
		g.phase, g.binary = phaseHeader, true
	default: // COM_QUERY and the commands answered by OK or ERR
		g.phase = phaseHeader
	}
}

// Server checks bytes read from the server. It returns an error when they complete (or, for
// framing, announce) a packet that breaks the protocol; the caller must not hand those bytes on.
func (g *Guard) Server(p []byte) error {
	if g.err != nil {
		return g.err
	}
	f := &g.srv
	for len(p) > 0 && g.phase != phaseOpaque {
		if !f.inBody {
			p = g.header(f, p, true)
			if g.err != nil {
				return g.err
			}
			if f.inBody && !f.cont {
				if g.phase == phaseIdle {
					return g.fail("the server sent a packet while no command was outstanding")
				}
				g.packetStart()
			}
			if f.inBody && f.remain == 0 {
				if err := g.serverFragmentEnd(); err != nil {
					return err
				}
			}
			continue
		}
		n := min(f.remain, len(p))
		chunk := p[:n]
		f.keep(chunk)
		switch {
		case g.phase == phaseAuth || g.phase == phaseGreeting:
			if len(g.auth)+n > maxAuthPacket {
				return g.fail("auth packet of more than %d bytes", maxAuthPacket)
			}
			g.auth = append(g.auth, chunk...)
		case g.walk.active:
			g.walk.feed(chunk)
		}
		if g.collect && n > 0 {
			g.collectOK(chunk)
		}
		f.remain -= n
		p = p[n:]
		if f.remain == 0 {
			if err := g.serverFragmentEnd(); err != nil {
				return err
			}
		}
	}
	return nil
}

// header consumes fragment-header bytes from p and returns the rest. Only the server's packets
// are held to the size limit.
func (g *Guard) header(f *frame, p []byte, limit bool) []byte {
	n := copy(f.hdr[f.hdrN:], p)
	f.hdrN += n
	p = p[n:]
	if f.hdrN < 4 {
		return p
	}
	f.hdrN = 0
	size := f.hdrLen()
	if !f.cont {
		f.seq, f.total, f.prefN = f.hdr[3], 0, 0
	}
	if limit && f.total+size > g.lim.MaxPacket {
		g.fail("packet of more than %d bytes", g.lim.MaxPacket)
		return nil
	}
	f.total += size
	f.remain, f.inBody = size, true
	return p
}

func (f *frame) hdrLen() int { return int(f.hdr[0]) | int(f.hdr[1])<<8 | int(f.hdr[2])<<16 }

// keep records the first bytes of the logical packet.
func (f *frame) keep(b []byte) {
	if f.prefN < prefixLen {
		f.prefN += copy(f.prefix[f.prefN:], b)
	}
}

// packetStart prepares the checks that run over a whole packet's payload.
func (g *Guard) packetStart() {
	g.walk.active = false
	g.auth = g.auth[:0]
	if g.sink != nil {
		g.ok, g.okOver = g.ok[:0], false
		g.collect = g.phase == phaseHeader || g.phase == phaseRows && g.caps&clientDeprecateEOF != 0
	}
	switch g.phase {
	case phaseDefs:
		g.walk.start(6, 11) // catalog, schema, table, org_table, name, org_name; then the fixed fields go-sql-driver reads
	case phaseRows:
		if !g.binary {
			g.walk.start(g.cols, 0)
		}
	}
}

func (g *Guard) serverFragmentEnd() error {
	f := &g.srv
	f.inBody = false
	if f.hdrLen() == MaxFragment {
		f.cont = true
		return nil
	}
	f.cont = false
	return g.packetEnd()
}

// packetEnd checks a complete logical packet and moves to the next phase.
func (g *Guard) packetEnd() error {
	f := &g.srv
	p := f.prefix[:f.prefN]
	total := f.total
	if total == 0 {
		// An empty packet only ends a run of max-size fragments; go-sql-driver would fail on
		// one alone, but without saying why.
		return g.fail("empty packet")
	}
	switch g.phase {
	case phaseGreeting:
		g.plugin = greetingPlugin(g.auth)
		g.phase = phaseAuth
	case phaseAuth:
		return g.authPacket()
	case phaseHeader:
		return g.headerPacket(p, total)
	case phaseDefs:
		if !g.walk.complete() {
			return g.fail("truncated column definition (%d bytes)", total)
		}
		g.left--
		if g.left == 0 {
			g.defsDone()
		}
	case phaseDefsEOF:
		g.phase = g.afterDefsPhase()
		if g.phase == phaseDefs {
			g.walkDefs()
		}
	case phaseRows:
		return g.rowPacket(p, total)
	case phasePrepare:
		return g.preparePacket(p, total)
	}
	return nil
}

// authPacket checks one packet of the auth exchange, kept whole in g.auth.
func (g *Guard) authPacket() error {
	a := g.auth
	switch a[0] {
	case 0x00: // OK: authenticated
		status, ok := okStatus(a, len(a))
		if !ok {
			return g.fail("truncated OK packet (%d bytes) ending the auth exchange", len(a))
		}
		if err := g.sessionState(a, status, false); err != nil {
			return err
		}
		g.status, g.statusKnown = status, true
		g.phase = phaseIdle
		if g.compressAfterAuth {
			g.phase = phaseOpaque
		}
	case 0xff:
		if !errPacketOK(a, len(a)) {
			return g.fail("truncated ERR packet (%d bytes) in the auth exchange", len(a))
		}
		g.phase = phaseIdle
	case 0xfe: // auth switch request: plugin name, NUL, scramble
		if len(a) == 1 {
			return nil // the old-password switch: go-sql-driver reuses the greeting's scramble
		}
		end := bytes.IndexByte(a[1:], 0)
		if end < 0 {
			return nil // go-sql-driver refuses it by itself
		}
		plugin, data := string(a[1:1+end]), a[2+end:]
		if len(data) > 0 && data[len(data)-1] == 0 {
			data = data[:len(data)-1]
		}
		need := 20
		switch plugin {
		case "mysql_clear_password":
			need = 0
		case "mysql_old_password":
			need = 8
		}
		if len(data) < need {
			return g.fail("auth switch to %q with %d bytes of scramble, want %d", plugin, len(data), need)
		}
		g.plugin = plugin
	case 0x01: // auth more data
		if len(a) < 2 {
			return g.fail("empty auth-more-data packet")
		}
		// Only these plugins exchange more data; for the others go-sql-driver would take the
		// packet for a successful login without the server's OK.
		if g.plugin != "caching_sha2_password" && g.plugin != "sha256_password" {
			return g.fail("auth more data for plugin %q, which exchanges none", g.plugin)
		}
		if block, _ := pem.Decode(a[1:]); block != nil {
			key, err := x509.ParsePKIXPublicKey(block.Bytes)
			if _, rsaKey := key.(*rsa.PublicKey); err == nil && !rsaKey {
				return g.fail("the server's public key is a %T, not an RSA key", key)
			}
		}
	}
	return nil
}

// greetingPlugin returns the auth plugin a protocol-10 greeting names, read as go-sql-driver
// reads it; mysql_native_password (go-sql-driver's default) when it names none.
func greetingPlugin(p []byte) string {
	const def = "mysql_native_password"
	if len(p) == 0 || p[0] == 0xff {
		return def
	}
	nul := bytes.IndexByte(p[1:], 0)
	if nul < 0 {
		return def
	}
	pos := 1 + nul + 1 + 4 + 8 + 1 + 2 // version, NUL, connection id, scramble part 1, filler, capabilities
	pos += 1 + 2 + 2 + 1 + 10 + 13     // charset, status, capabilities, scramble length, reserved, scramble part 2
	if pos >= len(p) {
		return def
	}
	name := p[pos:]
	if end := bytes.IndexByte(name, 0); end >= 0 {
		name = name[:end]
	}
	if len(name) == 0 {
		return def
	}
	return string(name)
}

// headerPacket checks a response's first packet (or the next result's header).
func (g *Guard) headerPacket(p []byte, total int) error {
	g.answered = g.answered || p[0] != 0xff
	switch p[0] {
	case 0x00:
		status, ok := okStatus(p, total)
		if !ok {
			return g.fail("truncated OK packet (%d bytes)", total)
		}
		if err := g.sessionState(g.ok, status, g.okOver); err != nil {
			return err
		}
		g.endResult(status)
	case 0xff:
		if !errPacketOK(p, total) {
			return g.fail("truncated ERR packet (%d bytes)", total)
		}
		g.phase = phaseIdle
	case 0xfb: // LOCAL INFILE request: the client sends the file, then the server answers again
	default:
		n, size, ok := lenenc(p, total)
		if !ok {
			return g.fail("truncated column count in a result header (%d bytes)", total)
		}
		follows := true
		if g.extCaps&clientCacheMetadata != 0 {
			if total < size+1 {
				return g.fail("result header without its metadata-follows byte")
			}
			follows = size < len(p) && p[size] == 0x01
		}
		if n > uint64(g.lim.MaxColumns) {
			return g.fail("result header announces %d columns, more than the %d any real result has", n, g.lim.MaxColumns)
		}
		g.cols = int(n)
		if g.binary && !follows && g.extCaps&clientCacheMetadata != 0 {
			g.phase = phaseRows // MariaDB's cached metadata: no definitions follow
			return nil
		}
		g.left, g.after = g.cols, defsThenRows
		g.walkDefs()
	}
	return nil
}

// rowPacket checks one packet of a result's rows.
func (g *Guard) rowPacket(p []byte, total int) error {
	switch {
	case p[0] == 0xff:
		if !errPacketOK(p, total) {
			return g.fail("truncated ERR packet (%d bytes) in a result", total)
		}
		g.phase = phaseIdle
	case p[0] == 0xfe && (g.binary || total <= MaxFragment):
		status, ok := g.eofStatus(p, total)
		if !ok {
			return g.fail("truncated end-of-result packet (%d bytes)", total)
		}
		if g.caps&clientDeprecateEOF != 0 {
			if err := g.sessionState(g.ok, status, g.okOver); err != nil {
				return err
			}
		}
		g.endResult(status)
	case g.binary:
		if p[0] != 0x00 {
			return nil // go-sql-driver refuses it by itself
		}
		if total < 1+(g.cols+7+2)/8 {
			return g.fail("binary row of %d bytes, shorter than its NULL bitmap", total)
		}
	default:
		if !g.walk.complete() {
			return g.fail("truncated row: a value runs past its packet, or fewer values than the %d columns", g.cols)
		}
	}
	return nil
}

// preparePacket checks the first packet of a COM_STMT_PREPARE answer.
func (g *Guard) preparePacket(p []byte, total int) error {
	switch p[0] {
	case 0x00:
		if total < 9 {
			return g.fail("truncated prepare answer (%d bytes)", total)
		}
		cols := int(binary.LittleEndian.Uint16(p[5:7]))
		params := int(binary.LittleEndian.Uint16(p[7:9]))
		g.prepCols = cols
		switch {
		case params > 0:
			g.left, g.after = params, defsThenPrepCols
			g.walkDefs()
		case cols > 0:
			g.left, g.after = cols, defsThenIdle
			g.walkDefs()
		default:
			g.phase = phaseIdle
		}
	case 0xff:
		if !errPacketOK(p, total) {
			return g.fail("truncated ERR packet (%d bytes)", total)
		}
		g.phase = phaseIdle
	default:
		g.phase = phaseIdle // go-sql-driver refuses it by itself
	}
	return nil
}

func (g *Guard) walkDefs() {
	g.phase = phaseDefs
	if g.left == 0 {
		g.defsDone()
	}
}

// defsDone moves past a run of definitions: to their EOF, or straight on with DEPRECATE_EOF.
func (g *Guard) defsDone() {
	if g.caps&clientDeprecateEOF == 0 {
		g.phase = phaseDefsEOF
		return
	}
	g.phase = g.afterDefsPhase()
}

// afterDefsPhase returns the phase after definitions and sets up its counts.
func (g *Guard) afterDefsPhase() phase {
	switch g.after {
	case defsThenPrepCols:
		if g.prepCols == 0 {
			return phaseIdle
		}
		g.left, g.after = g.prepCols, defsThenIdle
		return phaseDefs
	case defsThenIdle:
		return phaseIdle
	}
	return phaseRows
}

// endResult moves on after a result ended with status: to the next result's header when the
// server says more follow.
func (g *Guard) endResult(status uint16) {
	g.status, g.statusKnown = status, true
	if status&statusMoreResults != 0 {
		g.phase = phaseHeader
		return
	}
	g.phase = phaseIdle
}

// eofStatus reads the status of the packet ending a result: an EOF packet, or with
// DEPRECATE_EOF an OK packet with the 0xfe header.
func (g *Guard) eofStatus(p []byte, total int) (uint16, bool) {
	if g.caps&clientDeprecateEOF != 0 {
		return okStatus(p, total)
	}
	if total < 5 || len(p) < 5 {
		return 0, false
	}
	return binary.LittleEndian.Uint16(p[3:5]), true
}

// okStatus reads an OK packet's status flags: header, affected rows, last insert id (both
// length-encoded), status. ok is false when a field is missing.
func okStatus(p []byte, total int) (uint16, bool) {
	pos := 1
	for range 2 {
		_, size, ok := lenenc(p[min(pos, len(p)):], total-pos)
		if !ok {
			return 0, false
		}
		pos += size
	}
	if total < pos+2 || len(p) < pos+2 {
		return 0, false
	}
	return binary.LittleEndian.Uint16(p[pos : pos+2]), true
}

// errPacketOK reports whether an ERR packet has the fields go-sql-driver reads: the error
// number, the byte after it and, when that is '#', the five-byte SQLSTATE.
func errPacketOK(p []byte, total int) bool {
	if total < 4 || len(p) < 4 {
		return false
	}
	return p[3] != '#' || total >= 9
}

// lenenc decodes a length-encoded integer at the start of p, whose packet has total bytes from
// p on. ok is false when it is cut short.
func lenenc(p []byte, total int) (v uint64, size int, ok bool) {
	if total < 1 || len(p) < 1 {
		return 0, 0, false
	}
	switch p[0] {
	case 0xfc:
		size = 3
	case 0xfd:
		size = 4
	case 0xfe:
		size = 9
	default:
		return uint64(p[0]), 1, true
	}
	if total < size || len(p) < size {
		return 0, 0, false
	}
	for i := size - 1; i >= 1; i-- {
		v = v<<8 | uint64(p[i])
	}
	return v, size, true
}
