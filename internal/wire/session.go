package wire

import (
	"errors"
	"fmt"
)

// Session tracking (MySQL "Client/Server Protocol", OK_Packet and "Session State Information";
// MariaDB Knowledge Base, "OK_Packet"): with CLIENT_SESSION_TRACK negotiated, an OK packet
// (also the one ending a result with CLIENT_DEPRECATE_EOF, and the login's) is
//
//	header, affected rows, last insert id (both length-encoded), status flags (2), warnings (2),
//	info (length-encoded; may be absent when nothing follows),
//	when the status has SERVER_SESSION_STATE_CHANGED: the session-state block, length-encoded,
//
// and the block is a run of entries: a type byte, then the entry's data, length-encoded. Types
// 0 (SESSION_TRACK_SYSTEM_VARIABLES) carry a variable's name and value, 1 (SCHEMA) the new
// default schema, 3 (GTIDS) an encoding byte (0: text) and a GTID set, 4 and 5
// (TRANSACTION_CHARACTERISTICS, TRANSACTION_STATE) a text, each of these a length-encoded
// string; 2 (STATE_CHANGE) carries the one byte '1' (MySQL's Session_state_change_tracker and
// MariaDB write it bare, as read off the wire). go-sql-driver reads nothing of an OK packet past its status flags, so the block passes
// it untouched; the Guard reads it on the way (TrackSession).

// ClientSessionTrack is CLIENT_SESSION_TRACK, the capability flag that asks the server for
// session-state blocks in its OK packets.
const ClientSessionTrack = 1 << 23

// statusSessionStateChanged is SERVER_SESSION_STATE_CHANGED: an OK packet carries a block.
const statusSessionStateChanged = 0x4000

// Session-state entry types (MySQL's enum_session_state_type).
const (
	TrackSystemVariables            = 0
	TrackSchema                     = 1
	TrackStateChange                = 2
	TrackGTIDs                      = 3
	TrackTransactionCharacteristics = 4
	TrackTransactionState           = 5
)

// Bounds on what a session-state block may carry; past them a block is refused.
const (
	// MaxSessionOK bounds an OK packet whose session-state block the Guard reads: a real one
	// (a changed variable or two, a schema, one GTID) is under a kilobyte; 64 KiB is room for
	// every tracked variable at once and a GTID set of a thousand sources.
	MaxSessionOK = 64 << 10
	// maxVariableName is MySQL's NAME_CHAR_LEN: a system variable's name is at most 64
	// characters, all of them ASCII letters, digits and underscores.
	maxVariableName = 64
	// maxSchemaName is a schema name of 64 characters of up to 4 bytes each.
	maxSchemaName = 64 * 4
)

// errSessionState is wrapped by every refusal of a block's framing.
var errSessionState = errors.New("session-state block")

// SessionSink receives the entries of the session-state blocks a Guard reads, in order. An
// error refuses the block: the Guard then fails the read that completes the packet.
type SessionSink interface {
	// SessionEntry is told one entry: its type and, by type, name and value (see
	// SessionEntries). Both are the Guard's bytes, valid only during the call.
	SessionEntry(kind byte, name, value []byte) error
}

// SessionBlockEnder is a SessionSink told when a block's entries are all told: what a block
// leaves out (a setting the server changed as a consequence of another, unreported) shows
// only then.
type SessionBlockEnder interface {
	SessionBlockEnd()
}

// TrackSession makes g read the session-state block of every OK packet and tell sink its
// entries: the client negotiated CLIENT_SESSION_TRACK. Call it before the login's answer passes.
func (g *Guard) TrackSession(sink SessionSink) { g.sink = sink }

// SessionBlock returns the session-state block of p, the whole payload of an OK packet (header
// 0x00, or 0xfe ending a result), sent with CLIENT_SESSION_TRACK negotiated: nil when its status
// flags do not announce one. It returns an error when a field is cut short, a length runs past
// the packet, or bytes follow the block.
func SessionBlock(p []byte) ([]byte, error) {
	status, ok := okStatus(p, len(p))
	if !ok {
		return nil, fmt.Errorf("%w: truncated OK packet (%d bytes)", errSessionState, len(p))
	}
	if status&statusSessionStateChanged == 0 {
		return nil, nil
	}
	pos := 1
	for range 2 { // affected rows, last insert id
		_, size, _ := lenenc(p[pos:], len(p)-pos)
		pos += size
	}
	pos += 2 + 2                                        // status, warnings
	_, rest, err := sessionString(p[min(pos, len(p)):]) // the info
	if err != nil {
		return nil, fmt.Errorf("%w: the OK packet's info: %w", errSessionState, err)
	}
	block, rest, err := sessionString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSessionState, err)
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%w: %d bytes follow it in its OK packet", errSessionState, len(rest))
	}
	return block, nil
}

// SessionEntries checks the framing of block, a session-state block, and calls fn with each
// entry in order, stopping at fn's first error, which it returns. By type, name and value are:
// system variable: its name (1 to 64 ASCII letters, digits and underscores) and value; schema:
// the name (at most 256 bytes), value nil; state change: name nil, value "1" or "0"; GTIDs:
// name nil, value the GTID set's text (encoding 0, the only one defined); transaction
// characteristics and state: name nil, value the text; any other type: name nil, value the
// entry's data, unread. An entry whose data runs past the block, or whose fields do not fill
// its data exactly, is an error.
func SessionEntries(block []byte, fn func(kind byte, name, value []byte) error) error {
	for len(block) > 0 {
		kind := block[0]
		data, rest, err := sessionString(block[1:])
		if err != nil {
			return fmt.Errorf("%w: entry of type %d: %w", errSessionState, kind, err)
		}
		block = rest
		var name, value []byte
		switch kind {
		case TrackSystemVariables:
			if name, data, err = sessionString(data); err == nil {
				value, data, err = sessionString(data)
			}
			if err == nil && !variableName(name) {
				err = fmt.Errorf("a system variable named %.64q", name)
			}
		case TrackSchema:
			name, data, err = sessionString(data)
			if err == nil && len(name) > maxSchemaName {
				err = fmt.Errorf("a schema name of %d bytes, more than %d", len(name), maxSchemaName)
			}
		case TrackStateChange: // one byte, not a length-encoded string (MySQL and MariaDB alike)
			value, data = data, nil
			if len(value) != 1 || value[0] != '0' && value[0] != '1' {
				err = fmt.Errorf("state change %.8q, want \"1\" or \"0\"", value)
			}
		case TrackGTIDs:
			switch {
			case len(data) == 0:
				err = errors.New("no encoding")
			case data[0] != 0:
				err = fmt.Errorf("GTIDs in encoding %d, want 0", data[0])
			default:
				value, data, err = sessionString(data[1:])
			}
		case TrackTransactionCharacteristics, TrackTransactionState:
			value, data, err = sessionString(data)
		default:
			value, data = data, nil
		}
		if err == nil && len(data) > 0 {
			err = fmt.Errorf("%d bytes past its fields", len(data))
		}
		if err != nil {
			return fmt.Errorf("%w: entry of type %d: %w", errSessionState, kind, err)
		}
		if err := fn(kind, name, value); err != nil {
			return err
		}
	}
	return nil
}

// sessionString reads a length-encoded string at the start of p and returns it and the rest.
// NULL (0xfb) and the undefined 0xff are no string here; a length past p is an error.
func sessionString(p []byte) (s, rest []byte, err error) {
	if len(p) == 0 {
		return nil, nil, errors.New("cut short")
	}
	if p[0] == 0xfb || p[0] == 0xff {
		return nil, nil, fmt.Errorf("length byte 0x%x", p[0])
	}
	n, size, ok := lenenc(p, len(p))
	if !ok {
		return nil, nil, errors.New("length cut short")
	}
	if n > uint64(len(p)-size) {
		return nil, nil, fmt.Errorf("a length of %d bytes, only %d left", n, len(p)-size)
	}
	end := size + int(n)
	return p[size:end], p[end:], nil
}

// variableName reports whether b is a system variable's name.
func variableName(b []byte) bool {
	if len(b) == 0 || len(b) > maxVariableName {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// collectOK keeps the payload bytes chunk of a packet that may be an OK packet carrying a
// session-state block, up to MaxSessionOK; it stops at the first byte when the packet is none.
func (g *Guard) collectOK(chunk []byte) {
	if len(g.ok) == 0 && !g.okOver {
		head := byte(0x00)
		if g.phase == phaseRows {
			head = 0xfe
		}
		if chunk[0] != head {
			g.collect = false
			return
		}
	}
	if n := MaxSessionOK - len(g.ok); len(chunk) > n {
		chunk = chunk[:n]
		g.okOver = true
	}
	g.ok = append(g.ok, chunk...)
}

// sessionState reads the session-state block of the OK packet p (status its flags; whole when
// over is false) into the sink.
func (g *Guard) sessionState(p []byte, status uint16, over bool) error {
	if g.sink == nil || status&statusSessionStateChanged == 0 {
		return nil
	}
	if over {
		return g.fail("an OK packet carries a session-state block past the %d bytes lbd reads of one", MaxSessionOK)
	}
	block, err := SessionBlock(p)
	if err == nil {
		err = SessionEntries(block, g.sink.SessionEntry)
	}
	if err != nil {
		return g.fail("%v", err)
	}
	if e, ok := g.sink.(SessionBlockEnder); ok {
		e.SessionBlockEnd()
	}
	return nil
}

// Aside checks p, the whole payload of the answer to a command lbd sent on its own ahead of
// the client's (the client never sees the answer), which must be a single OK or ERR packet, and
// reads an OK's session-state block. isErr reports an ERR packet. An error is a violation, and
// the Guard's from then on.
func (g *Guard) Aside(p []byte) (isErr bool, err error) {
	if g.err != nil {
		return false, g.err
	}
	switch {
	case len(p) > 0 && p[0] == 0x00:
		status, ok := okStatus(p, len(p))
		if !ok {
			return false, g.fail("truncated OK packet (%d bytes)", len(p))
		}
		g.status, g.statusKnown = status, true
		return false, g.sessionState(p, status, false)
	case len(p) > 0 && p[0] == 0xff:
		if !errPacketOK(p, len(p)) {
			return false, g.fail("truncated ERR packet (%d bytes)", len(p))
		}
		return true, nil
	}
	return false, g.fail("a packet of %d bytes answered lbd's own command, which wants an OK or ERR packet", len(p))
}
