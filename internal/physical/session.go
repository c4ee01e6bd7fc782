package physical

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/lbd-go/lbd/internal/causal"
	"github.com/lbd-go/lbd/internal/wire"
)

// Session tracking. When a server offers CLIENT_SESSION_TRACK, lbd asks for it in the handshake
// response go-sql-driver writes (go-sql-driver never does), and the guard reads the
// session-state block of every OK packet on its way to go-sql-driver (wire.TrackSession), which
// reads nothing of an OK packet past its status flags. Before the first command of a
// connection lbd opens for the application, lbd sends its tracking request (trackingRequest) in
// the same write, and reads its answer before go-sql-driver reads its own: no round trip of its
// own. From then on every write's OK packet carries the GTID it made, and every change of the
// tracked session settings arrives with the statement that made it; SessionState holds them.

// SessionVar is a session setting lbd asks the server to report when it changes.
type SessionVar uint8

// The tracked session settings.
const (
	VarAutocommit SessionVar = iota
	VarCharacterSetClient
	VarCharacterSetConnection
	VarCharacterSetResults
	VarCollationConnection
	VarSQLMode
	VarTimeZone
	VarTransactionIsolation // MariaDB before 11.1: tx_isolation
	VarTransactionReadOnly  // MariaDB before 11.1: tx_read_only
	numVars
)

// varNames are the settings' names on MySQL and, where they differ, on MariaDB.
var varNames = [numVars][2]string{
	VarAutocommit:             {"autocommit"},
	VarCharacterSetClient:     {"character_set_client"},
	VarCharacterSetConnection: {"character_set_connection"},
	VarCharacterSetResults:    {"character_set_results"},
	VarCollationConnection:    {"collation_connection"},
	VarSQLMode:                {"sql_mode"},
	VarTimeZone:               {"time_zone"},
	VarTransactionIsolation:   {"transaction_isolation", "tx_isolation"},
	VarTransactionReadOnly:    {"transaction_read_only", "tx_read_only"},
}

// String returns the setting's name on MySQL.
func (v SessionVar) String() string {
	if v >= numVars {
		return fmt.Sprintf("SessionVar(%d)", v)
	}
	return varNames[v][0]
}

// name returns v's name on a server of the flavor (MariaDB or MySQL).
func (v SessionVar) name(mariadb bool) string {
	if n := varNames[v]; mariadb && n[1] != "" {
		return n[1]
	}
	return varNames[v][0]
}

// VarSet is a set of session settings.
type VarSet uint16

// Has reports whether v is in the set.
func (s VarSet) Has(v SessionVar) bool { return s&(1<<v) != 0 }

// maxVarValue bounds a tracked setting's value: the longest, sql_mode with every mode named,
// is under 600 bytes.
const maxVarValue = 1024

// trackingRequest returns the statement that asks a server of the flavor to report, in its OK
// packets, the GTID of each write of the session (MariaDB: the variable last_gtid; MySQL:
// session_track_gtids=OWN_GTID), the tracked settings, the default schema, and that the session
// state changed. MariaDB refuses a variable it does not know with error 1193, so its list names
// only MariaDB's variables (tx_isolation, tx_read_only: 10.11 has no transaction_isolation).
func trackingRequest(mariadb bool) string {
	names := make([]string, 0, numVars+1)
	if mariadb {
		names = append(names, "last_gtid")
	}
	for v := range numVars {
		names = append(names, v.name(mariadb))
	}
	gtids := ", session_track_gtids = OWN_GTID"
	if mariadb {
		gtids = ""
	}
	return "/* lbd session tracking */ SET SESSION session_track_system_variables = '" + strings.Join(names, ",") + "'" +
		gtids + ", session_track_schema = ON, session_track_state_change = ON"
}

// SessionState is what a server reported, through session tracking, of one physical
// connection's session: the GTID of its latest write, the tracked settings and default schema
// it changed, and whether its state changed. The connection's socket updates it as each OK
// packet arrives, before go-sql-driver returns the statement's result; read it only while
// holding the connection (between its statements), like the connection itself. The zero value
// tracks nothing.
//
// Every entry the server reports is numbered; Mark and Since tell what a statement changed:
// take a Mark before it, and Since(mark) after it.
//
// Only changes are reported: a setting the session never changed has no value here (its value
// is the server's default for the account). Settings changed before the tracking request took
// effect are not reported at all; lbd sends it before the first command, so those are none.
type SessionState struct {
	negotiated bool // CLIENT_SESSION_TRACK negotiated
	mariadb    bool // the server is MariaDB (by its greeting): last_gtid, tx_isolation
	requested  bool // lbd sent its tracking request
	answered   bool // its answer arrived
	refused    uint16
	overridden bool // the session's own commands may have changed what is tracked

	seq      uint64 // entries reported so far
	gtid     []byte // the latest GTID reported; empty when none
	gtidSet  bool   // it came as a MySQL GTID set (SESSION_TRACK_GTIDS), not MariaDB's last_gtid
	gtidAt   uint64
	schema   string
	schemaAt uint64
	stateAt  uint64
	vars     [numVars]string
	varAt    [numVars]uint64
}

// Negotiated reports whether the server offered session tracking and lbd asked for it: its OK
// packets carry session-state blocks.
func (s *SessionState) Negotiated() bool { return s != nil && s.negotiated }

// TracksGTIDs reports whether the server reports the GTID of every write of the session in
// its OK packet: it accepted lbd's tracking request, and nothing the session ran since may
// have changed that. When it does, GTID is the session's latest write's position, as the
// question @@last_gtid (MariaDB) would answer; when not, ask the server.
func (s *SessionState) TracksGTIDs() bool {
	return s != nil && s.answered && s.refused == 0 && !s.overridden
}

// Refused returns the number of the error with which the server refused lbd's tracking
// request (the session then reports only what the server tracks by default), 0 when it did
// not, or the request was not sent.
func (s *SessionState) Refused() uint16 {
	if s == nil {
		return 0
	}
	return s.refused
}

// Overridden reports whether a command of the session may have changed what the server tracks
// (a statement naming session_track_*, a change of user, a reset of the connection): from then
// on a setting that is not reported may still have changed.
func (s *SessionState) Overridden() bool { return s != nil && s.overridden }

// GTID returns the GTID (MariaDB: domain-server-sequence; MySQL: source_uuid:n) of the latest
// write the server reported for the session, "" when none, and its flavor (causal.MariaDB or
// causal.MySQL; it was checked with that flavor's causal.Flavor.Check).
func (s *SessionState) GTID() (string, causal.Flavor) {
	if s == nil {
		return "", causal.MariaDB
	}
	if s.gtidSet {
		return string(s.gtid), causal.MySQL
	}
	return string(s.gtid), causal.MariaDB
}

// Var returns the latest value the server reported for v, and whether it reported one.
func (s *SessionState) Var(v SessionVar) (value string, ok bool) {
	if s == nil || v >= numVars || s.varAt[v] == 0 {
		return "", false
	}
	return s.vars[v], true
}

// VarName returns v's name on this server (MariaDB before 11.1 says tx_isolation and
// tx_read_only), for a statement that sets it.
func (s *SessionState) VarName(v SessionVar) string { return v.name(s != nil && s.mariadb) }

// Schema returns the default schema the server reported last, and whether it reported one.
func (s *SessionState) Schema() (string, bool) {
	if s == nil || s.schemaAt == 0 {
		return "", false
	}
	return s.schema, true
}

// Mark numbers what the server reported so far, for Since.
func (s *SessionState) Mark() uint64 {
	if s == nil {
		return 0
	}
	return s.seq
}

// SessionChanges is what the server reported since a Mark.
type SessionChanges struct {
	Vars   VarSet // settings whose change was reported (their values: Var)
	Schema bool   // the default schema changed (Schema)
	GTID   bool   // a write reported its GTID (GTID)
	// State: the server said the session's state changed (session_track_state_change): a
	// setting, the schema, or what is not tracked one by one (user variables, temporary
	// tables, prepared statements).
	State bool
}

// Since returns what the server reported after mark.
func (s *SessionState) Since(mark uint64) SessionChanges {
	var c SessionChanges
	if s == nil {
		return c
	}
	for v := range numVars {
		if s.varAt[v] > mark {
			c.Vars |= 1 << v
		}
	}
	c.Schema, c.GTID, c.State = s.schemaAt > mark, s.gtidAt > mark, s.stateAt > mark
	return c
}

// SessionEntry implements wire.SessionSink: it checks and records one entry. A peer is
// untrusted: a GTID that is not one of the flavor's, a setting's value that is long or holds
// quotes, backslashes or control characters, or a schema name that is not UTF-8 or holds
// control characters, is refused, and the guard then fails the connection.
func (s *SessionState) SessionEntry(kind byte, name, value []byte) error {
	s.seq++
	switch kind {
	case wire.TrackSystemVariables:
		if bytes.EqualFold(name, []byte("last_gtid")) {
			return s.setGTID(causal.MariaDB, value)
		}
		v, ok := trackedVar(name)
		if !ok {
			return nil // not one lbd asked for: a default of the server's
		}
		if err := checkValue(value); err != nil {
			return fmt.Errorf("session state: %s: %w", v, err)
		}
		if s.vars[v] != string(value) { // compares without allocating
			s.vars[v] = string(value)
		}
		s.varAt[v] = s.seq
	case wire.TrackSchema:
		if !utf8.Valid(name) || bytes.ContainsFunc(name, isControl) {
			return fmt.Errorf("session state: a schema named %.64q", name)
		}
		if s.schema != string(name) {
			s.schema = string(name)
		}
		s.schemaAt = s.seq
	case wire.TrackStateChange:
		if value[0] == '1' {
			s.stateAt = s.seq
		}
	case wire.TrackGTIDs:
		return s.setGTID(causal.MySQL, value)
	}
	return nil
}

// setGTID records a write's GTID reported by a server of flavor f (by how it reported it).
// An empty one (MariaDB's last_gtid before any write) clears it.
func (s *SessionState) setGTID(f causal.Flavor, value []byte) error {
	if len(value) > 0 {
		if err := f.Check(value); err != nil {
			return fmt.Errorf("session state: GTID %.48q: %w", value, err)
		}
	}
	s.gtidSet = f == causal.MySQL
	s.gtid = append(s.gtid[:0], value...)
	s.gtidAt = s.seq
	return nil
}

// trackedVar returns the setting named name, in either server's spelling, in any case.
func trackedVar(name []byte) (SessionVar, bool) {
	for v := range numVars {
		for _, n := range varNames[v] {
			if n != "" && len(n) == len(name) && bytes.EqualFold(name, []byte(n)) {
				return v, true
			}
		}
	}
	return 0, false
}

// checkValue accepts a tracked setting's value: at most maxVarValue printable ASCII
// characters, none of them a quote or a backslash (no tracked setting has one), so a value can
// be written back in quotes as it is.
func checkValue(b []byte) error {
	if len(b) > maxVarValue {
		return fmt.Errorf("a value of %d bytes, more than %d", len(b), maxVarValue)
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e || c == '\'' || c == '"' || c == '\\' || c == '`' {
			return fmt.Errorf("value %.48q", b)
		}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// greetingMariaDB reports whether a protocol-10 greeting's payload p (checkGreeting passed it)
// is MariaDB's: its version says so (MariaDB 10 writes "5.5.5-10.x.y-MariaDB"), or it clears
// CLIENT_LONG_PASSWORD to announce MariaDB's extended capabilities.
func greetingMariaDB(p []byte, caps uint32) bool {
	nul := bytes.IndexByte(p[1:], 0)
	return caps&clientLongPassword == 0 || bytes.Contains(bytes.ToLower(p[1:1+nul]), []byte("mariadb"))
}

// Commands after which the server's session may track other things than lbd asked for.
const (
	comChangeUser      = 0x11
	comResetConnection = 0x1f
)

// trackSession sets s up for session tracking after a greeting offering it (caps its flags,
// p its payload): lbd asks for it in the handshake response, the guard reads every OK packet's
// session state into s.session, and a connection counted as the application's sends the
// tracking request ahead of its first command.
func (s *Socket) trackSession(p []byte, caps uint32) {
	if caps&wire.ClientSessionTrack == 0 {
		return
	}
	s.addCaps |= wire.ClientSessionTrack
	st := &s.session
	st.negotiated, st.mariadb = true, greetingMariaDB(p, caps)
	s.guard.TrackSession(st)
	if s.counted {
		st.requested = true
		s.ahead = commandPacket(s.ahead[:0], trackingRequest(st.mariadb))
	}
}

// commandPacket appends to dst a COM_QUERY packet of text, numbered 0 (a command's first).
func commandPacket(dst []byte, text string) []byte {
	n := 1 + len(text)
	dst = append(dst, byte(n), byte(n>>8), byte(n>>16), 0, 0x03)
	return append(dst, text...)
}

// sendAhead returns what to write for b, the client's packet, and how many answers lbd then
// reads aside before the client's: when b begins a command that the server answers, the
// commands lbd queued ahead of it go out first, in the same write. The session's own commands
// that may change what is tracked mark it overridden.
func (s *Socket) sendAhead(b []byte) (out []byte, answers int) {
	if len(b) < 5 || b[3] != 0 { // not a command's first packet
		return b, 0
	}
	switch b[4] {
	case comChangeUser, comResetConnection:
		s.session.overridden = true
	case 0x03, 0x16: // COM_QUERY, COM_STMT_PREPARE
		if s.session.negotiated && mentionsSessionTrack(b[5:]) {
			s.session.overridden = true
		}
	}
	if len(s.ahead) == 0 {
		return b, 0
	}
	switch b[4] {
	case 0x01: // COM_QUIT: the session ends, nothing to ask
		s.ahead = s.ahead[:0]
		return b, 0
	case 0x18, 0x19: // COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE: no answer to read after
		return b, 0
	}
	out = append(s.ahead, b...)
	s.ahead = out[:0:0] // sent: the next command goes alone
	return out, 1
}

// mentionsSessionTrack reports whether a statement's text names session_track, in any case.
func mentionsSessionTrack(text []byte) bool {
	const word = "session_track"
	for i := 0; ; {
		j := bytes.IndexByte(text[i:], '_')
		if j < 0 {
			return false
		}
		at := i + j - len("session")
		if at >= 0 && at+len(word) <= len(text) && bytes.EqualFold(text[at:at+len(word)], []byte(word)) {
			return true
		}
		i += j + 1
	}
}

// readAside reads the answers to the commands lbd sent ahead of the client's, one packet each
// (an OK or an ERR), from r, before the client reads its own; the guard checks them and reads
// their session state. An ERR answering the tracking request is the server's refusal of it.
func (s *Socket) readAside(r io.Reader) error {
	for s.asideAnswers > 0 {
		var h [4]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return err
		}
		size := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
		if size > wire.MaxSessionOK {
			return s.guard.Stop(fmt.Errorf("%w: a packet of %d bytes answered lbd's session-tracking request", wire.ErrViolation, size))
		}
		if cap(s.asideBuf) < size {
			s.asideBuf = make([]byte, size)
		}
		p := s.asideBuf[:size]
		if _, err := io.ReadFull(r, p); err != nil {
			return err
		}
		isErr, err := s.guard.Aside(p)
		if err != nil {
			return err
		}
		s.asideAnswers--
		st := &s.session
		st.answered = true
		if isErr {
			st.refused = binary.LittleEndian.Uint16(p[1:3])
		}
	}
	return nil
}
