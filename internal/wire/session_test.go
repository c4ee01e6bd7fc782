package wire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// entry is one session-state entry as SessionEntries reports it.
type entry struct {
	kind        byte
	name, value string
}

// entryLog is a SessionSink that keeps what it is told, and refuses values containing refuse.
type entryLog struct {
	got    []entry
	refuse string
}

func (r *entryLog) SessionEntry(kind byte, name, value []byte) error {
	if r.refuse != "" && bytes.Contains(value, []byte(r.refuse)) {
		return fmt.Errorf("refused %q", value)
	}
	r.got = append(r.got, entry{kind, string(name), string(value)})
	return nil
}

// lenencBytes is a length-encoded string of any length.
func lenencBytes(s []byte) []byte {
	var out []byte
	switch n := len(s); {
	case n < 0xfb:
		out = []byte{byte(n)}
	case n < 1<<16:
		out = []byte{0xfc, byte(n), byte(n >> 8)}
	case n < 1<<24:
		out = []byte{0xfd, byte(n), byte(n >> 8), byte(n >> 16)}
	default:
		out = []byte{0xfe, byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24), 0, 0, 0, 0}
	}
	return append(out, s...)
}

// trackEntry is one entry of a block: the type and its data, length-encoded.
func trackEntry(kind byte, data ...[]byte) []byte {
	return append([]byte{kind}, lenencBytes(bytes.Join(data, nil))...)
}

func variable(name, value string) []byte {
	return trackEntry(TrackSystemVariables, lenencBytes([]byte(name)), lenencBytes([]byte(value)))
}

// okState is an OK packet's payload (header head) with the status flags, the info and, when
// block is not nil, SERVER_SESSION_STATE_CHANGED and the block.
func okState(head byte, status uint16, info string, block []byte) []byte {
	if block != nil {
		status |= statusSessionStateChanged
	}
	p := []byte{head, 0, 0, byte(status), byte(status >> 8), 0, 0}
	p = append(p, lenencBytes([]byte(info))...)
	if block != nil {
		p = append(p, lenencBytes(block)...)
	}
	return p
}

// mariadbGTID is what MariaDB 10.11 sends for an INSERT with last_gtid tracked (as read off
// the wire): status 0x4002, no info, one system variable.
var mariadbGTID = []byte{0x00, 0x01, 0x00, 0x02, 0x40, 0x00, 0x00, 0x00, 0x13, 0x00, 0x11, 0x09,
	'l', 'a', 's', 't', '_', 'g', 't', 'i', 'd', 0x06, '0', '-', '1', '-', '1', '0'}

func TestSessionEntries(t *testing.T) {
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562:5"
	for _, tc := range []struct {
		name string
		ok   []byte
		want []entry
		err  string
	}{
		{name: "MariaDB's last_gtid", ok: mariadbGTID, want: []entry{{TrackSystemVariables, "last_gtid", "0-1-10"}}},
		{name: "no flag, no block", ok: okState(0, 2, "Rows matched: 0  Changed: 0  Warnings: 0", nil)},
		{name: "no flag, nothing after the warnings", ok: okPacket(2)},
		{name: "MariaDB's answer to SET (as read off the wire)", ok: b(0, 0, 0, 0x02, 0x40, 0, 0, 0, 3, 2, 1, '1'), want: []entry{{TrackStateChange, "", "1"}}},
		{name: "state change as a length-encoded string", ok: okState(0, 2, "", trackEntry(TrackStateChange, lstr("1"))), err: "state change"},
		{name: "every type", ok: okState(0, 2, "", bytes.Join([][]byte{
			variable("time_zone", "+01:00"),
			trackEntry(TrackSchema, lstr("test")),
			trackEntry(TrackStateChange, []byte("1")),
			trackEntry(TrackGTIDs, b(0), lstr(uuid)),
			trackEntry(TrackTransactionCharacteristics, lstr("START TRANSACTION READ ONLY;")),
			trackEntry(TrackTransactionState, lstr("T_______")),
			trackEntry(9, []byte("future")),
		}, nil)), want: []entry{
			{TrackSystemVariables, "time_zone", "+01:00"}, {TrackSchema, "test", ""}, {TrackStateChange, "", "1"},
			{TrackGTIDs, "", uuid}, {TrackTransactionCharacteristics, "", "START TRANSACTION READ ONLY;"},
			{TrackTransactionState, "", "T_______"}, {9, "", "future"},
		}},
		{name: "end of a result", ok: okState(0xfe, 2, "", trackEntry(TrackStateChange, []byte("1"))), want: []entry{{TrackStateChange, "", "1"}}},
		{name: "an empty value", ok: okState(0, 2, "", variable("sql_mode", "")), want: []entry{{TrackSystemVariables, "sql_mode", ""}}},
		{name: "a long value", ok: okState(0, 2, "", variable("sql_mode", strings.Repeat("A", 300))), want: []entry{{TrackSystemVariables, "sql_mode", strings.Repeat("A", 300)}}},

		// Refused.
		{name: "flag without its block", ok: okPacket(2 | statusSessionStateChanged), err: "info"},
		{name: "flag, info, no block", ok: append(okPacket(2|statusSessionStateChanged), 0), err: "cut short"},
		{name: "block longer than the packet", ok: append(okPacket(2|statusSessionStateChanged), 0, 50, 1, 4, 't'), err: "only 3 left"},
		{name: "huge block length", ok: append(okPacket(2|statusSessionStateChanged), 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), err: "left"},
		{name: "block length cut short", ok: append(okPacket(2|statusSessionStateChanged), 0, 0xfd, 1), err: "cut short"},
		{name: "NULL block", ok: append(okPacket(2|statusSessionStateChanged), 0, 0xfb), err: "0xfb"},
		{name: "bytes after the block", ok: append(okState(0, 2, "", trackEntry(TrackStateChange, []byte("1"))), 'x'), err: "follow"},
		{name: "entry longer than the block", ok: okState(0, 2, "", b(TrackSchema, 9, 4, 't', 'e')), err: "only 3 left"},
		{name: "entry without its length", ok: okState(0, 2, "", b(TrackSchema)), err: "cut short"},
		{name: "variable value past its entry", ok: okState(0, 2, "", trackEntry(TrackSystemVariables, lstr("a"), b(9, 'x'))), err: "only 1 left"},
		{name: "variable without a value", ok: okState(0, 2, "", trackEntry(TrackSystemVariables, lstr("a"))), err: "cut short"},
		{name: "bytes past a variable's fields", ok: okState(0, 2, "", trackEntry(TrackSystemVariables, lstr("a"), lstr("b"), b('!'))), err: "past its fields"},
		{name: "variable named with a quote", ok: okState(0, 2, "", variable("a'b", "1")), err: "named"},
		{name: "variable with an empty name", ok: okState(0, 2, "", variable("", "1")), err: "named"},
		{name: "variable with a long name", ok: okState(0, 2, "", variable(strings.Repeat("a", 65), "1")), err: "named"},
		{name: "long schema name", ok: okState(0, 2, "", trackEntry(TrackSchema, lenencBytes(make([]byte, 257)))), err: "schema name"},
		{name: "state change not 0 or 1", ok: okState(0, 2, "", trackEntry(TrackStateChange, []byte("2"))), err: "state change"},
		{name: "GTIDs in another encoding", ok: okState(0, 2, "", trackEntry(TrackGTIDs, b(1), lstr(uuid))), err: "encoding 1"},
		{name: "GTIDs without an encoding", ok: okState(0, 2, "", trackEntry(TrackGTIDs)), err: "no encoding"},
		{name: "GTID set past its entry", ok: okState(0, 2, "", trackEntry(TrackGTIDs, b(0, 200), []byte(uuid))), err: "left"},
		{name: "truncated OK", ok: b(0, 0xfc, 1), err: "truncated OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r entryLog
			block, err := SessionBlock(tc.ok)
			if err == nil {
				err = SessionEntries(block, r.SessionEntry)
			}
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && fmt.Sprint(r.got) != fmt.Sprint(tc.want):
				t.Fatalf("entries %v, want %v", r.got, tc.want)
			}
		})
	}
}

// session is an exchange with CLIENT_SESSION_TRACK: the login's OK names the schema, a write's
// OK carries its GTID, a result's end and a prepared statement's execution carry state too.
func session() []step {
	hs := handshake(modern|ClientSessionTrack, 0)
	hs[2] = srv(2, okState(0, 2, "", trackEntry(TrackSchema, lstr("test"))))
	end := okState(0xfe, 2, "", trackEntry(TrackStateChange, []byte("1")))
	return join(hs,
		[]step{query("INSERT"), srv(1, mariadbGTID)},
		[]step{query("SELECT"), srv(1, b(1)), srv(2, columnDef("x")), srv(3, lstr("1")), srv(4, end)},
		[]step{cli(0, b(comStmtExecute, 1, 0, 0, 0)), srv(1, b(1)), srv(2, columnDef("x")), srv(3, b(0, 0, 7)), srv(4, okState(0xfe, 2, "", variable("last_gtid", "0-1-11")))},
		[]step{query("UPDATE"), srv(1, okState(0, 2, "Rows matched: 0  Changed: 0  Warnings: 0", nil))},
	)
}

// runTracked is run with r as the Guard's sink.
func runTracked(steps []step, chunk int, r *entryLog) error {
	var g Guard
	g.Init(Limits{})
	g.TrackSession(r)
	return feed(&g, steps, chunk)
}

func TestGuardReadsSessionState(t *testing.T) {
	want := []entry{{TrackSchema, "test", ""}, {TrackSystemVariables, "last_gtid", "0-1-10"}, {TrackStateChange, "", "1"}, {TrackSystemVariables, "last_gtid", "0-1-11"}}
	for _, chunk := range []int{1 << 30, 1, 3, 7} {
		var r entryLog
		if err := runTracked(session(), chunk, &r); err != nil {
			t.Fatalf("chunks of %d: %v", chunk, err)
		}
		if fmt.Sprint(r.got) != fmt.Sprint(want) {
			t.Fatalf("chunks of %d: entries %v, want %v", chunk, r.got, want)
		}
	}
	// Without TrackSession the same bytes pass unread.
	if err := run(guardCase{steps: session()}, 1<<30); err != nil {
		t.Fatal(err)
	}
}

func TestGuardRefusesSessionState(t *testing.T) {
	hs := handshake(modern|ClientSessionTrack, 0)
	big := okState(0, 2, "", variable("sql_mode", strings.Repeat("A", MaxSessionOK)))
	for _, tc := range []struct {
		name   string
		steps  []step
		refuse string
		want   string
	}{
		{name: "an OK packet past the bound", steps: join(hs, []step{query("SET"), srv(1, big)}), want: "past the 65536 bytes"},
		{name: "a block cut short", steps: join(hs, []step{query("INSERT"), srv(1, mariadbGTID[:len(mariadbGTID)-2])}), want: "only"},
		{name: "a result's end with a bad block", steps: join(hs, []step{query("SELECT"), srv(1, b(1)), srv(2, columnDef("x")), srv(3, lstr("1")), srv(4, okState(0xfe, 2, "", b(TrackSchema, 40)))}), want: "left"},
		{name: "the login's OK with a bad block", steps: []step{hs[0], hs[1], srv(2, okState(0, 2, "", b(TrackStateChange, 2, '1')))}, want: "only 1 left"},
		{name: "a value the sink refuses", steps: join(hs, []step{query("INSERT"), srv(1, mariadbGTID)}), refuse: "0-1-10", want: "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, chunk := range []int{1 << 30, 1, 5} {
				r := entryLog{refuse: tc.refuse}
				err := runTracked(tc.steps, chunk, &r)
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrViolation) {
					t.Fatalf("chunks of %d: error %v, want a violation containing %q", chunk, err, tc.want)
				}
			}
		})
	}
	// A long OK packet without a block is nobody's business; a long row is not an OK packet.
	var r entryLog
	long := okState(0, 2, strings.Repeat("i", MaxSessionOK), nil)
	row := append(b(0xfc, 0xff, 0xff), make([]byte, 0xffff)...)
	steps := join(hs, []step{query("x"), srv(1, long), query("SELECT"), srv(1, b(1)), srv(2, columnDef("x")), srv(3, row), srv(4, okState(0xfe, 2, "", nil))})
	if err := runTracked(steps, 1<<30, &r); err != nil || len(r.got) != 0 {
		t.Fatalf("%v, entries %v", err, r.got)
	}
}

func TestGuardAside(t *testing.T) {
	var g Guard
	g.Init(Limits{})
	var r entryLog
	g.TrackSession(&r)
	for _, s := range handshake(modern|ClientSessionTrack, 0) {
		if s.client {
			g.Client(s.b)
		} else if err := g.Server(s.b); err != nil {
			t.Fatal(err)
		}
	}
	if isErr, err := g.Aside(okState(0, 2, "", trackEntry(TrackStateChange, []byte("1")))); isErr || err != nil || len(r.got) != 1 {
		t.Fatalf("OK aside: %v %v, entries %v", isErr, err, r.got)
	}
	if isErr, err := g.Aside(b(0xff, 0xa9, 0x04, '#', 'H', 'Y', '0', '0', '0', 'x')); !isErr || err != nil {
		t.Fatalf("ERR aside: %v %v", isErr, err)
	}
	if !g.Idle() {
		t.Fatal("an answer aside moved the guard off idle")
	}
	if _, err := g.Aside(b(1)); err == nil || !errors.Is(err, ErrViolation) {
		t.Fatalf("a result header aside: %v", err)
	}
	if _, err := g.Aside(okPacket(0)); err == nil {
		t.Fatal("the guard forgot its verdict")
	}
}

// FuzzSessionState feeds arbitrary OK packets to the block's reader: it must never panic,
// and an accepted block is exactly its entries written again.
func FuzzSessionState(f *testing.F) {
	f.Add(mariadbGTID)
	f.Add(okState(0, 2, "info", bytes.Join([][]byte{variable("time_zone", "SYSTEM"), trackEntry(TrackSchema, lstr("db")),
		trackEntry(TrackStateChange, []byte("1")), trackEntry(TrackGTIDs, b(0), lstr("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")),
		trackEntry(TrackTransactionState, lstr("________")), trackEntry(200, b(1, 2, 3))}, nil)))
	f.Add(okState(0xfe, 2, "", trackEntry(TrackSchema, lenencBytes(make([]byte, 300)))))
	f.Add(append(okPacket(2|statusSessionStateChanged), 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	f.Add(append(okPacket(2|statusSessionStateChanged), 0, 0xfc, 0xff))
	f.Fuzz(func(t *testing.T, ok []byte) {
		block, err := SessionBlock(ok)
		if err != nil {
			return
		}
		var again []byte
		err = SessionEntries(block, func(kind byte, name, value []byte) error {
			switch kind {
			case TrackSystemVariables:
				again = append(again, variable(string(name), string(value))...)
			case TrackSchema:
				again = append(again, trackEntry(kind, lenencBytes(name))...)
			case TrackGTIDs:
				again = append(again, trackEntry(kind, b(0), lenencBytes(value))...)
			case TrackStateChange:
				again = append(again, trackEntry(kind, value)...)
			case TrackTransactionCharacteristics, TrackTransactionState:
				again = append(again, trackEntry(kind, lenencBytes(value))...)
			default:
				again = append(again, trackEntry(kind, value)...)
			}
			return nil
		})
		// Length prefixes may be written longer than needed (0xfc for 5): compare what they
		// carry, not their bytes, by reading the rewritten block back.
		if err == nil && len(again) != len(block) {
			var n1, n2 int
			SessionEntries(block, func(byte, []byte, []byte) error { n1++; return nil })
			SessionEntries(again, func(byte, []byte, []byte) error { n2++; return nil })
			if n1 != n2 {
				t.Fatalf("block %x read as %d entries, written again as %d", block, n1, n2)
			}
		} else if err == nil && !bytes.Equal(again, block) {
			t.Fatalf("block %x written again as %x", block, again)
		}
	})
}
