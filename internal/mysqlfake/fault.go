package mysqlfake

import "strings"

// Phase is a point of the exchange where a fault can replace what the server sends.
type Phase int

// Phases, in the order a connection meets them. A result set (of COM_QUERY or COM_STMT_EXECUTE)
// is sent as the segments PhaseResultHeader .. PhaseResultEnd; every other answer to a command
// is PhaseAnswer. PhaseCommand replaces the whole answer to a command, result set or not.
const (
	PhaseAccept       Phase = iota // after the TCP accept, before the greeting (normal bytes: none)
	PhaseGreeting                  // the initial handshake packet
	PhaseAuth                      // the answer to the client's handshake response (normally OK)
	PhaseCommand                   // the whole answer to one command
	PhaseAnswer                    // an OK/ERR answer: COM_PING, COM_INIT_DB, a query without rows, ...
	PhasePrepare                   // the answer to COM_STMT_PREPARE
	PhaseResultHeader              // the column count packet
	PhaseColumns                   // the column definitions
	PhaseColumnsEOF                // the EOF after the column definitions (absent with CLIENT_DEPRECATE_EOF)
	PhaseRows                      // the rows
	PhaseResultEnd                 // the EOF (or OK with CLIENT_DEPRECATE_EOF) that ends the rows
)

var phaseNames = [...]string{"accept", "greeting", "auth", "command", "answer", "prepare", "header", "columns", "columns_eof", "rows", "end"}

// String returns the phase's short name, as used in fault names ("header", "rows", ...).
func (p Phase) String() string {
	if p >= 0 && int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "unknown"
}

// Connection reports whether the phase belongs to setting up a connection (before any command).
func (p Phase) Connection() bool { return p <= PhaseAuth }

// Action is what the server does once a fault's bytes are sent.
type Action int

const (
	// Continue carries on as if the phase's normal bytes had been sent.
	Continue Action = iota
	// Stall sends nothing more and keeps the socket open, reading and discarding what the
	// client sends, until the client leaves, the server closes or Config.StallTimeout passes.
	Stall
	// Close closes the connection (FIN).
	Close
	// Reset closes the connection with SO_LINGER 0, so the client sees a TCP RST.
	Reset
)

var actionNames = [...]string{"continue", "stall", "close", "reset"}

// String returns "continue", "stall", "close" or "reset".
func (a Action) String() string {
	if a >= 0 && int(a) < len(actionNames) {
		return actionNames[a]
	}
	return "unknown"
}

// Command is one command a client sent, as a fault's Match sees it.
type Command struct {
	Op   byte   // the command byte (ComQuery, ComPing, ...); 0 in the connection phases
	Text string // the SQL text of ComQuery and ComStmtPrepare; for ComStmtExecute the prepared text
	Conn int    // the connection's number on this server, from 1 in accept order
}

// Fault replaces what the server sends at one phase. The zero Bytes sends the normal bytes.
type Fault struct {
	// Name says what the fault does, "phase/what" by convention ("rows/len_past_packet").
	Name string
	// Phase is where the fault fires.
	Phase Phase
	// Bytes returns what to send instead of normal, the exact bytes (packet headers included)
	// the server would have sent at Phase. nil sends normal unchanged.
	Bytes func(normal []byte) []byte
	// After is what the server does once the bytes are sent.
	After Action
	// Conn limits the fault to the Nth connection accepted (from 1); 0 means every connection.
	Conn int
	// Match limits the fault to commands it accepts (it is not consulted in the connection
	// phases); nil matches every command.
	Match func(Command) bool
	// Times is how often the fault fires before it is spent; 0 means without limit.
	Times int
	// Beneath sends Bytes beneath the compressed protocol's framing, as they are: a fault in
	// the framing itself. Without compression it changes nothing.
	Beneath bool
	// Heavy marks a fault that makes an unguarded client allocate without bound (a huge column
	// count): run it only under a memory limit.
	Heavy bool
}

func (f *Fault) applies(ph Phase, c Command) bool {
	if f.Phase != ph || (f.Conn != 0 && f.Conn != c.Conn) {
		return false
	}
	if !ph.Connection() && f.Match != nil && !f.Match(c) {
		return false
	}
	return true
}

// Cut returns a Bytes function that keeps the first n bytes of the normal bytes (all of them
// when there are fewer); a negative n drops that many from the end.
func Cut(n int) func([]byte) []byte {
	return func(normal []byte) []byte {
		if n < 0 {
			n = max(len(normal)+n, 0)
		}
		return normal[:min(n, len(normal))]
	}
}

// Half returns the first half of the normal bytes: a prefix that leaves the client waiting.
func Half(normal []byte) []byte { return normal[:len(normal)/2] }

// Raw returns a Bytes function that sends exactly b, whatever the phase's normal bytes.
func Raw(b []byte) func([]byte) []byte {
	return func([]byte) []byte { return b }
}

// Payload returns a Bytes function that sends payload as one packet carrying the sequence
// number of the first normal packet (0 when there is none).
func Payload(payload []byte) func([]byte) []byte {
	return func(normal []byte) []byte { return Packet(seqOf(normal), payload) }
}

// Reseq returns a Bytes function that sends the normal bytes with every packet's sequence
// number moved by delta.
func Reseq(delta byte) func([]byte) []byte {
	return func(normal []byte) []byte {
		out := append([]byte(nil), normal...)
		for i := 0; i+4 <= len(out); {
			out[i+3] += delta
			i += 4 + (int(out[i]) | int(out[i+1])<<8 | int(out[i+2])<<16)
		}
		return out
	}
}

func seqOf(normal []byte) byte {
	if len(normal) >= 4 {
		return normal[3]
	}
	return 0
}

// QueryContains matches COM_QUERY, COM_STMT_PREPARE and COM_STMT_EXECUTE commands whose text
// contains s.
func QueryContains(s string) func(Command) bool {
	return func(c Command) bool {
		return (c.Op == ComQuery || c.Op == ComStmtPrepare || c.Op == ComStmtExecute) && strings.Contains(c.Text, s)
	}
}
