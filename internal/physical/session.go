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

	// The base: the session as lbd opened it, after go-sql-driver's connect-time statements
	// (SET NAMES, the DSN's parameters) and lbd's own commands, against which a logical
	// session's settings are measured (statement mode restores them on the connection a
	// statement borrows).
	baseTaken     bool
	base          [numVars]string
	baseSet       VarSet
	baseSchema    string
	baseSchemaSet bool
	dirty         VarSet // settings whose value differs from the base now
	schemaDirty   bool   // the default schema differs from the base now
	baseRefused   uint16 // the error that answered lbd's question for the base; 0: none
	baseMissing   bool   // the answer to that question left a setting unreported

	// The block being read reported character_set_connection, collation_connection.
	blockConn, blockColl bool
}

// Implied is the value Var gives collation_connection after the server changed
// character_set_connection without reporting collation_connection (MariaDB's SET NAMES without
// COLLATE, SET CHARACTER SET): the server set it to that character set's default collation,
// whose name lbd does not know; and character_set_connection after a change of
// collation_connection alone (the character set is the collation's). Setting the other of the
// two to the same value again gives the same pair. No reported value is ever Implied (values
// hold no control characters).
const Implied = "\x00implied"

// baseQuestion returns the statement that makes a server of the flavor report every tracked
// setting by setting each to its own value: MySQL and MariaDB evaluate every value of a SET
// before they assign any, so each keeps its value, and collation_connection, set after
// character_set_connection, keeps its own too. lbd sends it once a connection is opened
// (after go-sql-driver's connect-time statements), so that the base holds every setting's
// value: settings that the handshake made (the character set) are otherwise never reported.
func baseQuestion(mariadb bool) string {
	var b strings.Builder
	b.WriteString("/* lbd session base */ SET SESSION ")
	for v := range numVars {
		if v > 0 {
			b.WriteString(", ")
		}
		n := v.name(mariadb)
		b.WriteString(n)
		b.WriteString(" = @@SESSION.")
		b.WriteString(n)
	}
	return b.String()
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
		s.noteVar(v)
		switch v {
		case VarCharacterSetConnection:
			s.blockConn = true
		case VarCollationConnection:
			s.blockColl = true
		}
	case wire.TrackSchema:
		if !utf8.Valid(name) || bytes.ContainsFunc(name, isControl) {
			return fmt.Errorf("session state: a schema named %.64q", name)
		}
		if s.schema != string(name) {
			s.schema = string(name)
		}
		s.schemaAt = s.seq
		s.schemaDirty = !s.baseSchemaSet || s.baseSchema != s.schema
	case wire.TrackStateChange:
		if value[0] == '1' {
			s.stateAt = s.seq
		}
	case wire.TrackGTIDs:
		return s.setGTID(causal.MySQL, value)
	}
	return nil
}

// noteVar records whether v, just reported, differs from its base value.
func (s *SessionState) noteVar(v SessionVar) {
	if s.baseSet.Has(v) && s.base[v] == s.vars[v] {
		s.dirty &^= 1 << v
	} else {
		s.dirty |= 1 << v
	}
}

// Replayable reports whether the server reports every change of the tracked settings and
// says when anything else of the session changed: it accepted lbd's tracking request,
// reported every setting's value in answer to lbd's question for the base, and nothing the
// session ran since may have changed what it tracks. Statement mode restores a
// logical session's settings on another connection only then.
func (s *SessionState) Replayable() bool {
	return s != nil && s.answered && s.refused == 0 && s.baseRefused == 0 && !s.baseMissing && !s.overridden
}

// Tracking reports whether the connection negotiated session tracking and its request is
// sent or still to go out with the next command, and was not refused nor overridden: after
// the next command, Replayable tells.
func (s *SessionState) Tracking() bool {
	return s != nil && s.negotiated && s.requested && s.refused == 0 && s.baseRefused == 0 && !s.baseMissing && !s.overridden
}

// Base returns v's value as lbd opened the connection, and whether the server reported one:
// false until the answer to lbd's question for the base (baseQuestion) has arrived, or when
// that answer left v out (the connection then replays nothing: Replayable).
func (s *SessionState) Base(v SessionVar) (string, bool) {
	if s == nil || !s.baseSet.Has(v) {
		return "", false
	}
	return s.base[v], true
}

// BaseSchema returns the default schema as lbd opened the connection (the login's), and
// whether the server reported one.
func (s *SessionState) BaseSchema() (string, bool) {
	if s == nil || !s.baseSchemaSet {
		return "", false
	}
	return s.baseSchema, true
}

// Dirty returns the settings whose value differs from the base now, and whether the default
// schema does: all none for a connection whose session is as lbd opened it. Zero for a
// connection without tracking.
func (s *SessionState) Dirty() (VarSet, bool) {
	if s == nil {
		return 0, false
	}
	return s.dirty, s.schemaDirty
}

// takeBase makes the session as it stands the base (the connection is opened, or reset).
func (s *SessionState) takeBase() {
	s.baseTaken = true
	s.baseSet = 0
	for v := range numVars {
		if s.varAt[v] != 0 {
			s.base[v] = s.vars[v]
			s.baseSet |= 1 << v
		}
	}
	s.baseSchema, s.baseSchemaSet = s.schema, s.schemaAt != 0
	s.dirty, s.schemaDirty = 0, false
}

// absorb makes what lbd's own command reported after mark part of the base: lbd's commands
// set the session up as it opens (the tracking request, the question for the base,
// go-sql-driver's connect-time statements replayed after a reset). The state-change flag they raised is lbd's, not the
// session's: it goes back to stateAt.
func (s *SessionState) absorb(mark, stateAt uint64) {
	s.stateAt = stateAt
	if !s.baseTaken {
		return // takeBase takes it all when the connection is adopted
	}
	for v := range numVars {
		if s.varAt[v] > mark {
			s.base[v] = s.vars[v]
			s.baseSet |= 1 << v
			s.dirty &^= 1 << v
		}
	}
	if s.schemaAt > mark {
		s.baseSchema, s.baseSchemaSet, s.schemaDirty = s.schema, true, false
	}
}

// clearAfterReset forgets what the server reported of the session before a
// COM_RESET_CONNECTION it accepted: the settings are its defaults again, no write of the new
// session has a GTID, and the tracking request must be made again (it follows the reset). The
// default schema survives a reset, and with it what is known of it.
func (s *SessionState) clearAfterReset() {
	s.answered, s.refused, s.baseRefused, s.baseMissing, s.overridden = false, 0, 0, false, false
	s.gtid, s.gtidSet, s.gtidAt = s.gtid[:0], false, 0
	s.vars = [numVars]string{}
	s.varAt = [numVars]uint64{}
	s.base = [numVars]string{}
	s.baseSet, s.dirty = 0, 0
}

// SessionBlockEnd implements wire.SessionBlockEnder: a block that changed one of
// character_set_connection and collation_connection without reporting the other leaves the
// other Implied.
func (s *SessionState) SessionBlockEnd() {
	switch {
	case s.blockConn && !s.blockColl:
		s.imply(VarCollationConnection)
	case s.blockColl && !s.blockConn:
		s.imply(VarCharacterSetConnection)
	}
	s.blockConn, s.blockColl = false, false
}

// imply records v as changed to a value the server did not report (Implied).
func (s *SessionState) imply(v SessionVar) {
	s.vars[v] = Implied
	s.varAt[v] = s.seq
	s.noteVar(v)
}

// NumVars is the number of tracked settings: SessionVar values run from 0 to NumVars-1.
const NumVars = int(numVars)

// VarNamed returns the tracked setting named name, in either server's spelling, in any case.
func VarNamed(name string) (SessionVar, bool) { return trackedVar([]byte(name)) }

// ChangedSince reports whether the server said the session's state changed after mark
// (session_track_state_change): a tracked setting, the schema, or anything not tracked one by
// one. One comparison.
func (s *SessionState) ChangedSince(mark uint64) bool { return s != nil && s.stateAt > mark }

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
		s.recording = true
		s.queueTracking()
	}
}

// queueTracking queues the tracking request ahead of the next command.
func (s *Socket) queueTracking() {
	s.session.requested = true
	s.queue(asideTrack, func(dst []byte) []byte { return commandPacket(dst, trackingRequest(s.session.mariadb)) })
}

// What lbd sends on its own ahead of the client's next command; readAside reads each answer
// by what it answers.
const (
	asideTrack   byte = iota // the tracking request
	asideBase                // the question for the base (baseQuestion)
	asideReset               // COM_RESET_CONNECTION
	asideReplay              // a connect-time statement replayed after a reset
	asideRestore             // a logical session's settings restored (Conn.Restore)
)

// queue appends a command of kind, written by add, to those that go out ahead of the next
// command.
func (s *Socket) queue(kind byte, add func(dst []byte) []byte) {
	s.ahead = add(s.ahead)
	s.aheadKinds = append(s.aheadKinds, kind)
}

// commandPacket appends to dst a COM_QUERY packet of text, numbered 0 (a command's first).
func commandPacket(dst []byte, text string) []byte {
	n := 1 + len(text)
	dst = append(dst, byte(n), byte(n>>8), byte(n>>16), 0, 0x03)
	return append(dst, text...)
}

// maxConnectStatements bounds the connect-time statements a socket keeps for replay after a
// reset: go-sql-driver's SET NAMES and the DSN's parameters, a few hundred bytes. A connection
// whose statements pass it cannot be reset; it is closed instead.
const maxConnectStatements = 16 << 10

// record keeps b, a packet go-sql-driver writes before the connection is adopted, when it is a
// whole COM_QUERY: its connect-time statements, to replay after a reset.
func (s *Socket) record(b []byte) {
	if len(b) < 5 || b[3] != 0 || b[4] != 0x03 {
		return
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if n != len(b)-4 || len(s.connectCmds)+len(b) > maxConnectStatements {
		s.connectOver = true
		return
	}
	s.connectCmds = append(s.connectCmds, b...)
}

// adopted ends the connect: what the server reported so far is the session's base, and the
// connect-time statements are all recorded. A connection that tracks asks, ahead of its first
// command, for every setting's value (baseQuestion), which completes the base.
func (s *Socket) adopted() {
	s.recording = false
	s.session.takeBase()
	s.queueBase()
}

// queueBase queues the question for the base when the connection tracks.
func (s *Socket) queueBase() {
	if st := &s.session; st.negotiated && st.requested {
		s.queue(asideBase, func(dst []byte) []byte { return commandPacket(dst, baseQuestion(st.mariadb)) })
	}
}

// sendAhead returns what to write for b, the client's packet, and moves the commands lbd
// queued ahead to those whose answers it reads aside: when b begins a command that the server
// answers, the queued commands go out first, in the same write. The session's own commands
// that may change what is tracked mark it overridden.
func (s *Socket) sendAhead(b []byte) []byte {
	if len(b) < 5 || b[3] != 0 { // not a command's first packet
		return b
	}
	switch b[4] {
	case comChangeUser, comResetConnection:
		s.session.overridden = true
	case 0x03, 0x16: // COM_QUERY, COM_STMT_PREPARE
		if s.session.negotiated && mentionsSessionTrack(b[5:]) {
			s.session.overridden = true
		}
	}
	if s.recording {
		s.record(b)
	}
	if len(s.ahead) == 0 {
		return b
	}
	switch b[4] {
	case 0x01: // COM_QUIT: the session ends, nothing to ask
		s.ahead, s.aheadKinds = s.ahead[:0], s.aheadKinds[:0]
		return b
	case 0x18, 0x19: // COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE: no answer to read after
		return b
	}
	out := append(s.ahead, b...)
	s.ahead = out[:0:0] // sent: the next command goes alone
	s.asideKinds = append(s.asideKinds, s.aheadKinds...)
	s.aheadKinds = s.aheadKinds[:0]
	return out
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
// their session state, which becomes part of the base (absorb). An ERR answering the tracking
// request is the server's refusal of it; one answering a reset or a replayed statement is
// kept for Reset.
func (s *Socket) readAside(r io.Reader) error {
	for len(s.asideKinds) > 0 {
		var h [4]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return err
		}
		size := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
		if size > wire.MaxSessionOK {
			return s.guard.Stop(fmt.Errorf("%w: a packet of %d bytes answered a command lbd sent on its own", wire.ErrViolation, size))
		}
		if cap(s.asideBuf) < size {
			s.asideBuf = make([]byte, size)
		}
		p := s.asideBuf[:size]
		if _, err := io.ReadFull(r, p); err != nil {
			return err
		}
		st := &s.session
		mark, stateAt := st.seq, st.stateAt
		isErr, err := s.guard.Aside(p)
		if err != nil {
			return err
		}
		var code uint16
		if isErr {
			code = binary.LittleEndian.Uint16(p[1:3])
		}
		kind := s.asideKinds[0]
		s.asideKinds = s.asideKinds[1:]
		switch kind {
		case asideTrack:
			st.answered = true
			st.refused = code
		case asideBase:
			st.baseRefused = code
		case asideReset:
			if isErr {
				s.resetErr = code
			} else {
				st.clearAfterReset()
			}
		case asideReplay, asideRestore:
			if isErr && s.replayErr == 0 {
				s.replayErr = code
			}
		}
		if kind == asideRestore {
			st.stateAt = stateAt // lbd's own change; the settings are the session's, not the base
		} else {
			st.absorb(mark, stateAt)
		}
		if kind == asideBase && !isErr && st.baseSet != 1<<numVars-1 {
			st.baseMissing = true // a setting's own value is unknown: nothing is replayed
		}
	}
	s.asideKinds = s.asideKinds[:0]
	return nil
}

// queueReset queues, ahead of the next command, COM_RESET_CONNECTION, the tracking request
// (the reset clears it) when the connection tracks, then go-sql-driver's connect-time
// statements and, when the default schema moved from the base, a USE of the base schema. It
// reports false when the connection cannot be brought back to its base: its connect-time
// statements were not all recorded, or its schema moved and the base schema is unknown.
func (s *Socket) queueReset() bool {
	st := &s.session
	base, known := st.BaseSchema()
	if s.connectOver || st.schemaDirty && !known {
		return false
	}
	s.resetErr, s.replayErr = 0, 0
	s.queue(asideReset, func(dst []byte) []byte { return append(dst, 1, 0, 0, 0, comResetConnection) })
	if st.negotiated {
		s.queueTracking()
	}
	for b := s.connectCmds; len(b) >= 4; {
		n := 4 + (int(b[0]) | int(b[1])<<8 | int(b[2])<<16)
		s.queue(asideReplay, func(dst []byte) []byte { return append(dst, b[:n]...) })
		b = b[n:]
	}
	if st.schemaDirty {
		s.queue(asideReplay, func(dst []byte) []byte { return commandPacket(dst, "USE "+QuoteName(base)) })
	}
	s.queueBase()
	return true
}

// QuoteName quotes an identifier in backticks, doubling those inside.
func QuoteName(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}
