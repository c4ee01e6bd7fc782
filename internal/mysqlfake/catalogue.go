package mysqlfake

import "fmt"

// Catalogue returns one fault of every class lbd must survive, named "phase/what". Each fault
// fires on every connection and command (set Conn, Match or Times on a copy to narrow it). The
// classes: at every phase a prefix then a stall, and a prefix then a reset; before the greeting
// a close, a reset, a stall and garbage; in the greeting a truncation, an error packet cut
// short, a wrong sequence number and a 16 MiB announcement followed by nothing; in the auth
// exchange one-byte ERR and OK answers, a truncated auth switch and auth-more-data garbage; in
// a result set a truncated or huge column count (2^24 and 2^32, Heavy), column definitions cut
// after every field, broken EOF packets, rows with truncated length-encoded strings, lengths
// past the packet and wrong field counts, a final OK/EOF of one byte, ERR packets of 1 to 3
// bytes and wrong sequence numbers; in OK answers and prepare answers truncations.
func Catalogue() []Fault {
	var out []Fault
	add := func(ph Phase, what string, bytes func([]byte) []byte, after Action) {
		out = append(out, Fault{Name: ph.String() + "/" + what, Phase: ph, Bytes: bytes, After: after})
	}
	payload := func(b ...byte) func([]byte) []byte { return Payload(b) }

	// Before the greeting.
	add(PhaseAccept, "close", nil, Close)
	add(PhaseAccept, "reset", nil, Reset)
	add(PhaseAccept, "stall", nil, Stall)
	add(PhaseAccept, "garbage", Raw([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")), Close)
	add(PhaseAccept, "garbage_stall", Raw([]byte{0x10, 0, 0, 0, 0x0a, '5'}), Stall)

	// Every phase with normal bytes: a prefix, then a stall or a reset; the whole of it, then
	// a stall (the next phase never comes).
	for _, ph := range []Phase{PhaseGreeting, PhaseAuth, PhaseAnswer, PhasePrepare, PhaseResultHeader, PhaseColumns, PhaseColumnsEOF, PhaseRows, PhaseResultEnd} {
		add(ph, "half_stall", Half, Stall)
		add(ph, "half_reset", Half, Reset)
		add(ph, "whole_reset", nil, Reset)
		if ph != PhaseResultEnd && ph != PhaseAnswer {
			add(ph, "whole_stall", nil, Stall)
		}
	}
	// Packet-level faults at every phase that carries packets.
	for _, ph := range []Phase{PhaseGreeting, PhaseAuth, PhaseAnswer, PhasePrepare, PhaseResultHeader, PhaseColumns, PhaseRows, PhaseResultEnd} {
		add(ph, "header_only", Cut(4), Close)
		add(ph, "announce_16MiB", func(normal []byte) []byte { return []byte{0xff, 0xff, 0xff, seqOf(normal)} }, Stall)
		add(ph, "wrong_seq", Reseq(5), Continue)
		add(ph, "empty_packet", payload(), Continue)
		for n := 1; n <= 3; n++ {
			add(ph, fmt.Sprintf("err_%dbyte", n), Payload([]byte{0xff, 0x15, 0x04}[:n]), Continue)
		}
	}

	// The greeting.
	add(PhaseGreeting, "protocol_only", payload(0x0a), Close)
	add(PhaseGreeting, "no_version_nul", payload(0x0a, '8', '.', '0'), Close)
	add(PhaseGreeting, "cut_after_salt", func(normal []byte) []byte {
		p := normal[4:]
		return Packet(0, p[:1+len("8.0.36-mysqlfake")+1+4+8])
	}, Close)
	add(PhaseGreeting, "cut_before_salt2", func(normal []byte) []byte { p := normal[4:]; return Packet(0, p[:len(p)-30]) }, Close)
	add(PhaseGreeting, "protocol_9", func(normal []byte) []byte { p := append([]byte(nil), normal[4:]...); p[0] = 9; return Packet(0, p) }, Close)
	add(PhaseGreeting, "no_protocol41", func(normal []byte) []byte {
		p := append([]byte(nil), normal[4:]...)
		at := 1 + len("8.0.36-mysqlfake") + 1 + 4 + 8 + 1
		p[at+1] &^= byte(ClientProtocol41 >> 8)
		return Packet(0, p)
	}, Close)

	// The auth exchange.
	add(PhaseAuth, "ok_1byte", payload(0x00), Continue)
	add(PhaseAuth, "ok_lenenc_past_end", payload(0x00, 0xfe, 1, 2), Continue)
	add(PhaseAuth, "switch_1byte", payload(0xfe), Continue)
	add(PhaseAuth, "switch_no_nul", payload(append([]byte{0xfe}, "mysql_native_pass"...)...), Continue)
	add(PhaseAuth, "switch_no_data", payload(append([]byte{0xfe}, "mysql_native_password\x00"...)...), Continue)
	add(PhaseAuth, "switch_unknown_plugin", payload(append([]byte{0xfe}, "x_plugin\x00abcdefgh\x00"...)...), Continue)
	add(PhaseAuth, "more_data_1byte", payload(0x01), Continue)
	add(PhaseAuth, "more_data_garbage", payload(0x01, 0x99, 0x00), Continue)
	add(PhaseAuth, "more_data_fast_ok_then_stall", payload(0x01, 0x03), Stall)
	add(PhaseAuth, "unknown_byte", payload(0x42, 1, 2, 3), Continue)

	// The column count.
	add(PhaseResultHeader, "lenenc_2byte_cut", payload(0xfc, 0x01), Continue)
	add(PhaseResultHeader, "lenenc_8byte_cut", payload(0xfe, 1, 0, 0), Continue)
	add(PhaseResultHeader, "local_infile_empty", payload(0xfb), Continue)
	add(PhaseResultHeader, "local_infile", payload(0xfb, 'x'), Continue)
	add(PhaseResultHeader, "ok_1byte", payload(0x00), Continue)
	add(PhaseResultHeader, "two_columns_one_sent", payload(0x02), Continue)
	add(PhaseResultHeader, "cols_1000_then_stall", payload(0xfc, 0xe8, 0x03), Stall)
	out = append(out,
		Fault{Name: "header/cols_2e24", Phase: PhaseResultHeader, Bytes: payload(0xfe, 0, 0, 0, 1, 0, 0, 0, 0), After: Close, Heavy: true},
		Fault{Name: "header/cols_2e32", Phase: PhaseResultHeader, Bytes: payload(0xfe, 0, 0, 0, 0, 1, 0, 0, 0), After: Close, Heavy: true},
	)

	// Column definitions cut after every field.
	def := ColumnDef("1", typeVarString)
	for i, cut := range ColumnDefCuts("1", typeVarString) {
		add(PhaseColumns, fmt.Sprintf("def_cut_field%d", i+1), Payload(def[:cut]), Continue)
	}
	add(PhaseColumns, "def_name_past_end", payload(3, 'd', 'e', 'f', 0, 0, 0, 0xfc, 0xff, 0xff, '1'), Continue)
	add(PhaseColumns, "eof_instead", payload(0xfe, 0, 0, 2, 0), Continue)

	// The EOF after the columns.
	add(PhaseColumnsEOF, "eof_1byte", payload(0xfe), Continue)
	add(PhaseColumnsEOF, "missing", Raw(nil), Continue)

	// Rows.
	add(PhaseRows, "lenenc_2byte_cut", payload(0xfc, 0x05), Continue)
	add(PhaseRows, "lenenc_3byte_cut", payload(0xfd, 0x05, 0x00), Continue)
	add(PhaseRows, "lenenc_8byte_cut", payload(0xfe, 0x05, 0x00, 0x00), Continue)
	add(PhaseRows, "len_past_packet", payload(0x05, '1'), Continue)
	add(PhaseRows, "len_2e24_past_packet", payload(0xfd, 0xff, 0xff, 0xff, '1'), Continue)
	add(PhaseRows, "two_fields", payload(0x01, '1', 0x01, '2'), Continue)
	add(PhaseRows, "eof_1byte", payload(0xfe), Continue)
	add(PhaseRows, "value_2", payload(0x01, '2'), Continue)
	add(PhaseRows, "null_value", payload(0xfb), Continue)

	// The final OK/EOF.
	add(PhaseResultEnd, "ok_1byte", payload(0x00), Continue)
	add(PhaseResultEnd, "eof_1byte", payload(0xfe), Continue)
	add(PhaseResultEnd, "eof_more_results_then_stall", payload(0xfe, 0, 0, 0x0a, 0), Stall)
	add(PhaseResultEnd, "missing_then_stall", Raw(nil), Stall)

	// OK answers and prepare answers.
	add(PhaseAnswer, "ok_1byte", payload(0x00), Continue)
	add(PhaseAnswer, "ok_lenenc_cut", payload(0x00, 0xfc, 0x01), Continue)
	add(PhaseAnswer, "ok_info_past_end", payload(0x00, 0, 0, 2, 0, 0, 0, 0xfc, 0xff, 0x00), Continue)
	add(PhasePrepare, "ok_1byte", payload(0x00), Continue)
	add(PhasePrepare, "ok_short", payload(0x00, 1, 0, 0, 0), Continue)
	add(PhasePrepare, "params_65535", payload(0x00, 1, 0, 0, 0, 1, 0, 0xff, 0xff, 0, 0, 0), Stall)
	return out
}

// Lookup returns the catalogue's fault called name, and false when there is none.
func Lookup(name string) (Fault, bool) {
	for _, f := range Catalogue() {
		if f.Name == name {
			return f, true
		}
	}
	return Fault{}, false
}
