package wire

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
)

// step is one direction's bytes in a scripted exchange.
type step struct {
	client bool
	b      []byte
}

func pkt(seq byte, payload ...[]byte) []byte {
	p := bytes.Join(payload, nil)
	return append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}, p...)
}

func srv(seq byte, payload ...[]byte) step { return step{b: pkt(seq, payload...)} }
func cli(seq byte, payload ...[]byte) step { return step{client: true, b: pkt(seq, payload...)} }

func b(bs ...byte) []byte { return bs }

// lstr is a length-encoded string.
func lstr(s string) []byte { return append([]byte{byte(len(s))}, s...) }

// handshake is a greeting, a handshake response with caps (and MariaDB extended caps), and the
// auth OK.
func handshake(caps, ext uint32) []step {
	resp := make([]byte, 32)
	binary.LittleEndian.PutUint32(resp, caps)
	binary.LittleEndian.PutUint32(resp[28:], ext)
	resp = append(resp, "root\x00\x00"...)
	return []step{
		srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)),
		cli(1, resp),
		srv(2, okPacket(0)),
	}
}

func okPacket(status uint16) []byte { return []byte{0, 0, 0, byte(status), byte(status >> 8), 0, 0} }
func eofPacket(status uint16) []byte {
	return []byte{0xfe, 0, 0, byte(status), byte(status >> 8)}
}

// columnDef is a complete column definition.
func columnDef(name string) []byte {
	p := bytes.Join([][]byte{lstr("def"), lstr("db"), lstr("t"), lstr("t"), lstr(name), lstr(name)}, nil)
	return append(p, 0x0c, 0x21, 0, 11, 0, 0, 0, 0x08, 0, 0, 0, 0, 0)
}

const modern = clientDeprecateEOF // MySQL 8 with go-sql-driver: OK packets end results

func query(s string) step { return cli(0, []byte{comQuery}, []byte(s)) }

// textResult is a one-column, one-row result as a server with caps sends it.
func textResult(caps uint32, value string, status uint16) []step {
	out := []step{srv(1, b(1)), srv(2, columnDef("x"))}
	seq := byte(3)
	if caps&clientDeprecateEOF == 0 {
		out = append(out, srv(seq, eofPacket(0)))
		seq++
	}
	out = append(out, srv(seq, lstr(value)))
	seq++
	if caps&clientDeprecateEOF == 0 {
		return append(out, srv(seq, eofPacket(status)))
	}
	end := okPacket(status)
	end[0] = 0xfe
	return append(out, srv(seq, end))
}

func join(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type guardCase struct {
	name  string
	lim   Limits
	steps []step
	want  string // substring of the error; "" for none
}

func rsaFreeKeyPEM(t *testing.T) []byte {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func guardCases(t *testing.T) []guardCase {
	bigRow := append([]byte{0xfd, 0xff, 0xff, 0xff}, make([]byte, MaxFragment)...) // one value of 16 MiB - 1 bytes
	return []guardCase{
		{name: "text result, EOF packets", steps: join(handshake(0, 0), []step{query("SELECT 1")}, textResult(0, "1", 0), []step{query("SELECT 1")}, textResult(0, "1", 0))},
		{name: "text result, DEPRECATE_EOF", steps: join(handshake(modern, 0), []step{query("SELECT 1")}, textResult(modern, "1", 0))},
		{name: "NULL and empty values", steps: join(handshake(modern, 0), []step{query("q"), srv(1, b(2)), srv(2, columnDef("a")), srv(3, columnDef("b")), srv(4, b(0xfb, 0)), srv(5, b(0xfe, 0, 0, 0, 0, 0, 0))})},
		{name: "two results", steps: join(handshake(modern, 0), []step{query("CALL p()")}, textResult(modern, "1", statusMoreResults), []step{srv(6, okPacket(0))})},
		{name: "OK announcing more results", steps: join(handshake(modern, 0), []step{query("a;b"), srv(1, okPacket(statusMoreResults)), srv(2, okPacket(0))})},
		{name: "ERR with SQLSTATE", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0xff, 0x28, 0x04), []byte("#42000syntax"))})},
		{name: "ERR without SQLSTATE", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0xff, 0x28, 0x04, 'x'))})},
		{name: "ping", steps: join(handshake(modern, 0), []step{cli(0, b(0x0e)), srv(1, okPacket(0))})},
		{name: "statement close has no answer", steps: join(handshake(modern, 0), []step{cli(0, b(comStmtClose, 1, 0, 0, 0)), cli(0, b(0x0e)), srv(1, okPacket(0))})},
		{name: "a value spanning two fragments", steps: join(handshake(modern, 0), []step{query("SELECT blob"), srv(1, b(1)), srv(2, columnDef("x")),
			{b: append([]byte{0xff, 0xff, 0xff, 3}, bigRow[:MaxFragment]...)}, {b: append([]byte{4, 0, 0, 4}, bigRow[MaxFragment:]...)}, srv(5, b(0xfe, 0, 0, 0, 0, 0, 0))})},
		{name: "prepare and execute", steps: join(handshake(modern, 0), []step{
			cli(0, b(comStmtPrepare), []byte("SELECT ?")), srv(1, b(0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0)), srv(2, columnDef("?")), srv(3, columnDef("x")),
			cli(0, b(comStmtExecute, 1, 0, 0, 0)), srv(1, b(1)), srv(2, columnDef("x")), srv(3, b(0, 0, 7)), srv(4, b(0xfe, 0, 0, 0, 0, 0, 0)),
		})},
		{name: "MariaDB metadata-follows byte", steps: join(handshake(modern, clientCacheMetadata), []step{
			query("SELECT 1"), srv(1, b(1, 1)), srv(2, columnDef("x")), srv(3, lstr("1")), srv(4, b(0xfe, 0, 0, 0, 0, 0, 0)),
			cli(0, b(comStmtExecute, 1, 0, 0, 0)), srv(1, b(1, 0)), srv(2, b(0, 0, 7)), srv(3, b(0xfe, 0, 0, 0, 0, 0, 0)),
		})},
		{name: "more data under caching_sha2_password", steps: []step{
			srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 4+8+1+2+1+2+2+1+10+13), []byte("caching_sha2_password\x00")), cli(1, make([]byte, 40)),
			srv(2, b(1, 3)), srv(3, okPacket(0)),
		}},
		{name: "more data under mysql_native_password", steps: []step{
			srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 4+8+1+2+1+2+2+1+10+13), []byte("mysql_native_password\x00")), cli(1, make([]byte, 40)),
			srv(2, b(1, 3)),
		}, want: "exchanges none"},
		{name: "auth switch and more data", steps: []step{
			srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)), cli(1, make([]byte, 40)),
			srv(2, b(0xfe), []byte("caching_sha2_password\x00"), make([]byte, 20), b(0)), cli(3, make([]byte, 32)),
			srv(4, b(1, 3)), srv(5, okPacket(0)),
		}},
		{name: "TLS: nothing checked after the SSL request", steps: []step{
			srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)), cli(1, b(0, 8, 0, 0), make([]byte, 28)), {b: []byte("\x16\x03\x01 any TLS bytes")},
		}},

		// Violations.
		{name: "truncated OK", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0))}), want: "truncated OK"},
		{name: "OK cut inside a length", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0, 0xfc, 1))}), want: "truncated OK"},
		{name: "truncated ERR", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0xff, 1, 2))}), want: "truncated ERR"},
		{name: "ERR cut in its SQLSTATE", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0xff, 1, 2, '#', '4'))}), want: "truncated ERR"},
		{name: "2^32 columns", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0xfe, 0, 0, 0, 0, 1, 0, 0, 0))}), want: "4294967296 columns"},
		{name: "columns above the limit", lim: Limits{MaxColumns: 10}, steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(11))}), want: "11 columns"},
		{name: "column count cut short", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(0xfc, 1))}), want: "column count"},
		{name: "missing metadata-follows byte", steps: join(handshake(modern, clientCacheMetadata), []step{query("x"), srv(1, b(1))}), want: "metadata-follows"},
		{name: "column definition without fixed fields", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(1)), srv(2, lstr("def"), lstr(""), lstr(""), lstr(""), lstr("x"), lstr("x"), b(0x0c, 0x21))}), want: "column definition"},
		{name: "column definition string past its end", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(1)), srv(2, b(200), []byte("def"))}), want: "column definition"},
		{name: "row value past its packet", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(1)), srv(2, columnDef("x")), srv(3, b(5, '1'))}), want: "truncated row"},
		{name: "row missing a value", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(2)), srv(2, columnDef("a")), srv(3, columnDef("b")), srv(4, lstr("1"))}), want: "truncated row"},
		{name: "row length header cut", steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(1)), srv(2, columnDef("x")), srv(3, b(0xfc, 1))}), want: "truncated row"},
		{name: "1-byte EOF ending rows", steps: join(handshake(0, 0), []step{query("x"), srv(1, b(1)), srv(2, columnDef("x")), srv(3, eofPacket(0)), srv(4, lstr("1")), srv(5, b(0xfe))}), want: "end-of-result"},
		{name: "binary row shorter than its bitmap", steps: join(handshake(modern, 0), []step{cli(0, b(comStmtExecute, 1, 0, 0, 0)), srv(1, b(20))}, func() []step {
			var s []step
			for i := range 20 {
				s = append(s, srv(byte(2+i), columnDef("c")))
			}
			return append(s, srv(22, b(0, 0)))
		}()), want: "NULL bitmap"},
		{name: "truncated prepare answer", steps: join(handshake(modern, 0), []step{cli(0, b(comStmtPrepare), []byte("SELECT ?")), srv(1, b(0, 1, 0))}), want: "prepare answer"},
		{name: "empty packet", steps: join(handshake(modern, 0), []step{query("x"), srv(1)}), want: "empty packet"},
		{name: "packet while idle", steps: join(handshake(modern, 0), []step{srv(0, okPacket(0))}), want: "no command"},
		{name: "packet after the answer", steps: join(handshake(modern, 0), []step{query("x"), srv(1, okPacket(0)), srv(2, okPacket(0))}), want: "no command"},
		{name: "packet above the size limit", lim: Limits{MaxPacket: 100}, steps: join(handshake(modern, 0), []step{query("x"), {b: b(101, 0, 0, 1)}}), want: "more than 100 bytes"},
		{name: "fragments above the size limit", lim: Limits{MaxPacket: MaxFragment + 10}, steps: join(handshake(modern, 0), []step{query("x"), srv(1, b(1)), srv(2, columnDef("x")),
			{b: append([]byte{0xff, 0xff, 0xff, 3}, bigRow[:MaxFragment]...)}, {b: b(11, 0, 0, 4)}}), want: "more than"},
		{name: "1-byte ERR login answer", steps: []step{srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)), cli(1, make([]byte, 40)), srv(2, b(0xff))}, want: "truncated ERR"},
		{name: "1-byte OK login answer", steps: []step{srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)), cli(1, make([]byte, 40)), srv(2, b(0))}, want: "truncated OK"},
		{name: "auth switch with a short scramble", steps: []step{srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)), cli(1, make([]byte, 40)), srv(2, b(0xfe), []byte("mysql_native_password\x00abc\x00"))}, want: "scramble"},
		{name: "empty auth more data", steps: []step{srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)), cli(1, make([]byte, 40)), srv(2, b(1))}, want: "auth-more-data"},
		{name: "public key that is not RSA", steps: []step{srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 4+8+1+2+1+2+2+1+10+13), []byte("caching_sha2_password\x00")), cli(1, make([]byte, 40)), srv(2, b(1), rsaFreeKeyPEM(t))}, want: "not an RSA key"},
		{name: "auth packet above its bound", steps: []step{srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40)), cli(1, make([]byte, 40)), srv(2, b(0xfe), make([]byte, maxAuthPacket))}, want: "auth packet"},
	}
}

// run feeds the steps to a fresh Guard, each step in chunks of at most chunk bytes, and returns
// the first error.
func run(c guardCase, chunk int) error {
	var g Guard
	g.Init(c.lim)
	return feed(&g, c.steps, chunk)
}

// feed feeds the steps to g, each step in chunks of at most chunk bytes, and returns the first
// error.
func feed(g *Guard, steps []step, chunk int) error {
	for _, s := range steps {
		for p := s.b; len(p) > 0; {
			n := min(chunk, len(p))
			if s.client {
				g.Client(p[:n])
			} else if err := g.Server(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
	}
	return g.Err()
}

func TestGuard(t *testing.T) {
	for _, c := range guardCases(t) {
		t.Run(c.name, func(t *testing.T) {
			// The verdict must not depend on how the bytes arrive.
			for _, chunk := range []int{1 << 30, 1, 3, 7} {
				err := run(c, chunk)
				switch {
				case c.want == "" && err != nil:
					t.Fatalf("chunks of %d: %v", chunk, err)
				case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
					t.Fatalf("chunks of %d: error %v, want one containing %q", chunk, err, c.want)
				case err != nil && !errors.Is(err, ErrViolation):
					t.Fatalf("%v does not wrap ErrViolation", err)
				}
			}
		})
	}
}

func TestGuardIsStickyAndOpaqueAfterCompression(t *testing.T) {
	var g Guard
	g.Init(Limits{})
	for _, s := range handshake(modern|clientCompress, 0) {
		if s.client {
			g.Client(s.b)
		} else if err := g.Server(s.b); err != nil {
			t.Fatal(err)
		}
	}
	if !g.Opaque() {
		t.Fatal("compression negotiated, but the guard still parses packets")
	}
	if err := g.Server([]byte{1, 2, 3, 4, 5, 6, 7, 8}); err != nil {
		t.Fatalf("compressed bytes were judged: %v", err)
	}

	g.Init(Limits{})
	for _, s := range handshake(modern, 0) {
		if s.client {
			g.Client(s.b)
		} else {
			g.Server(s.b)
		}
	}
	if err := g.Server(pkt(0, okPacket(0))); err == nil {
		t.Fatal("unsolicited packet accepted")
	}
	if err := g.Server(pkt(1, okPacket(0))); err == nil {
		t.Fatal("the guard forgot its verdict")
	}
}

// FuzzGuard feeds arbitrary server bytes after a handshake and a query: the guard must never
// panic, and the same bytes in other chunks must get the same verdict.
func FuzzGuard(f *testing.F) {
	for _, c := range guardCases(&testing.T{}) {
		var srvBytes []byte
		for _, s := range c.steps[3:] {
			if !s.client {
				srvBytes = append(srvBytes, s.b...)
			}
		}
		if len(srvBytes) < 1<<16 {
			f.Add(srvBytes)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		base := join(handshake(modern, 0), []step{query("SELECT 1")})
		whole := run(guardCase{steps: append(base, step{b: data})}, 1<<30)
		split := run(guardCase{steps: append(base, step{b: data})}, 5)
		if (whole == nil) != (split == nil) {
			t.Fatalf("verdict depends on chunking: %v vs %v", whole, split)
		}
	})
}

// Answered tells an ERR that opened the answer (nothing of the text ran) from one that came
// after an OK with more results pending (the first statement ran), and starts over at each
// command.
func TestGuardAnswered(t *testing.T) {
	errPkt := []byte{0xff, 0x0a, 0x05, '#', 'H', 'Y', '0', '0', '0', 'r', 'o'}
	feed := func(g *Guard, steps ...step) {
		t.Helper()
		for _, s := range steps {
			if s.client {
				g.Client(s.b)
			} else if err := g.Server(s.b); err != nil {
				t.Fatal(err)
			}
		}
	}
	var g Guard
	g.Init(Limits{})
	feed(&g, handshake(modern, 0)...)
	query := cli(0, []byte{0x03}, []byte("INSERT 1; INSERT 2"))
	feed(&g, query, srv(1, errPkt))
	if g.Answered() {
		t.Fatal("an ERR opening the answer counted as an answer")
	}
	feed(&g, query, srv(1, okPacket(0x0a)), srv(2, errPkt))
	if !g.Answered() {
		t.Fatal("an ERR after an OK with more results did not count the OK")
	}
	feed(&g, query, srv(1, errPkt))
	if g.Answered() {
		t.Fatal("Answered carried over to the next command")
	}
	feed(&g, query, srv(1, b(1)), srv(2, columnDef("a")), srv(3, b(1, '1')), srv(4, eofPacket(0x02)))
	if !g.Answered() {
		t.Fatal("a result set did not count as an answer")
	}
}

// TestAutocommitted: the guard reports whether the latest command began outside a
// transaction in autocommit mode from the status flags the server sent before it, never from
// the text, and says no when it has not seen them.
func TestAutocommitted(t *testing.T) {
	const auto, inTx = statusAutocommit, statusAutocommit | statusInTrans
	for _, tc := range []struct {
		name  string
		steps []step
		want  bool
	}{
		{"no flags seen yet", []step{srv(0, []byte("\x0a8.0.0\x00"), make([]byte, 40))}, false},
		{"autocommit after the login", join(handshake(modern, 0)[:2], []step{srv(2, okPacket(auto)), query("SELECT 1")}), true},
		{"autocommit off", join(handshake(modern, 0)[:2], []step{srv(2, okPacket(0)), query("SELECT 1")}), false},
		{"after BEGIN", join(handshake(modern, 0)[:2], []step{srv(2, okPacket(auto)), query("BEGIN"), srv(1, okPacket(inTx)), query("SELECT 1")}), false},
		{"after COMMIT", join(handshake(modern, 0)[:2], []step{srv(2, okPacket(auto)), query("BEGIN"), srv(1, okPacket(inTx)), query("COMMIT"), srv(1, okPacket(auto)), query("SELECT 1")}), true},
		{"a result's end inside a transaction", join(handshake(modern, 0)[:2], []step{srv(2, okPacket(auto)), query("SELECT 1")}, textResult(modern, "1", inTx), []step{query("SELECT 2")}), false},
		{"an ERR keeps the flags before it", join(handshake(modern, 0)[:2], []step{srv(2, okPacket(auto)), query("x"), srv(1, b(0xff, 0x28, 0x04, 'x')), query("SELECT 1")}), true},
		{"in a read-only transaction", join(handshake(modern, 0)[:2], []step{srv(2, okPacket(auto)), query("START TRANSACTION READ ONLY"), srv(1, okPacket(inTx|statusInTransRO)), query("INSERT")}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g Guard
			g.Init(Limits{})
			for _, s := range tc.steps {
				if s.client {
					g.Client(s.b)
				} else if err := g.Server(s.b); err != nil {
					t.Fatal(err)
				}
			}
			if got := g.Autocommitted(); got != tc.want {
				t.Fatalf("Autocommitted() = %v, want %v", got, tc.want)
			}
			if got, want := g.ReadOnlyTx(), strings.Contains(tc.name, "read-only"); got != want {
				t.Fatalf("ReadOnlyTx() = %v, want %v", got, want)
			}
		})
	}
}
