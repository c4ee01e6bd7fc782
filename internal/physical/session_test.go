package physical

import (
	"context"
	"crypto/tls"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/causal"
	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/wire"
)

// trackEntry is one session-state entry: its type and its data, length-encoded.
func trackEntry(kind byte, data []byte) []byte {
	return append(mysqlfake.LenencInt([]byte{kind}, uint64(len(data))), data...)
}

// varEntry is a system variable's entry.
func varEntry(name, value string) []byte {
	return trackEntry(wire.TrackSystemVariables, mysqlfake.LenencString(mysqlfake.LenencString(nil, name), value))
}

// gtidEntry is MySQL's entry for a write's GTID.
func gtidEntry(set string) []byte {
	return trackEntry(wire.TrackGTIDs, mysqlfake.LenencString([]byte{0}, set))
}

const testUUID = "3e11fa47-71ca-11e1-9e33-c80aa9429562"

// trackingFake is a fake server with session tracking that reports, like a MySQL server asked
// for it: a GTID for every INSERT, the time zone for SET time_zone, the schema for USE; it
// records every query it gets.
type trackingFake struct {
	mu      sync.Mutex
	queries []string
	srv     *mysqlfake.Server
}

func startTrackingFake(t *testing.T, cfg mysqlfake.Config, answer func(q string) *mysqlfake.Result) *trackingFake {
	f := &trackingFake{}
	cfg.SessionTrack, cfg.DeprecateEOF = true, true
	n := 0
	cfg.Answer = func(q string) *mysqlfake.Result {
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		if answer != nil {
			if res := answer(q); res != nil {
				return res
			}
		}
		switch {
		case strings.HasPrefix(q, "INSERT"):
			n++
			return &mysqlfake.Result{Session: gtidEntry(fmt.Sprintf("%s:%d", testUUID, n))}
		case strings.HasPrefix(q, "SET time_zone"):
			return &mysqlfake.Result{Session: append(varEntry("time_zone", "+01:00"), trackEntry(wire.TrackStateChange, []byte("1"))...)}
		case strings.HasPrefix(q, "USE "):
			return &mysqlfake.Result{Session: trackEntry(wire.TrackSchema, mysqlfake.LenencString(nil, q[4:]))}
		case q == "SELECT 1":
			return &mysqlfake.Result{Columns: []string{"1"}, Rows: [][]string{{"1"}}, Session: trackEntry(wire.TrackStateChange, []byte("1"))}
		}
		return mysqlfake.DefaultAnswer(q)
	}
	f.srv = mysqlfake.Start(t, cfg)
	return f
}

func (f *trackingFake) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

// transports are the ways lbd carries a connection, as the Connector sets them up.
func transports(t *testing.T) []struct {
	name string
	srv  mysqlfake.Config
	edit func(*mysql.Config)
} {
	serverTLS, roots, err := mysqlfake.SelfSigned("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	withTLS := func(c *mysql.Config) { c.TLS = &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"} }
	compress := func(c *mysql.Config) { c.Apply(mysql.EnableCompression(true)) }
	return []struct {
		name string
		srv  mysqlfake.Config
		edit func(*mysql.Config)
	}{
		{"plain", mysqlfake.Config{}, nil},
		{"tls", mysqlfake.Config{TLS: serverTLS}, withTLS},
		{"compress", mysqlfake.Config{Compress: true}, compress},
		{"tls+compress", mysqlfake.Config{TLS: serverTLS, Compress: true}, func(c *mysql.Config) { withTLS(c); compress(c) }},
	}
}

// TestSessionTracking: over every transport, lbd negotiates session tracking with a server
// that offers it, sends its tracking request with the first command (one write, its answer read
// aside: go-sql-driver's results are untouched), and keeps what each OK packet reports.
func TestSessionTracking(t *testing.T) {
	for _, tr := range transports(t) {
		t.Run(tr.name, func(t *testing.T) {
			f := startTrackingFake(t, tr.srv, nil)
			r := newRigWith(t, f.srv.Addr(), tr.edit)
			c := r.dial(t)
			ctx := context.Background()
			st := c.Session()
			if !st.Negotiated() || st.TracksGTIDs() {
				t.Fatalf("before the first command: negotiated %v, tracks GTIDs %v; want negotiated, not yet tracking", st.Negotiated(), st.TracksGTIDs())
			}
			if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (1)", nil); err != nil {
				t.Fatal(err)
			}
			got := f.got()
			if len(got) != 3 || !strings.Contains(got[0], "session_track_gtids = OWN_GTID") || !strings.HasPrefix(got[0], "/* lbd session tracking */ SET SESSION") ||
				!strings.HasPrefix(got[1], "/* lbd session base */ SET SESSION autocommit = @@SESSION.autocommit,") || got[2] != "INSERT INTO t VALUES (1)" {
				t.Fatalf("the server got %q; want the tracking request, the question for the base, then the INSERT", got)
			}
			if !st.TracksGTIDs() || st.Refused() != 0 {
				t.Fatalf("tracks GTIDs %v, refused %d", st.TracksGTIDs(), st.Refused())
			}
			if g, f := st.GTID(); g != testUUID+":1" || f != causal.MySQL {
				t.Fatalf("GTID %q (%v), want %s:1 (mysql)", g, f, testUUID)
			}
			mark := st.Mark()
			if _, err := c.ExecContext(ctx, "SET time_zone = '+01:00'", nil); err != nil {
				t.Fatal(err)
			}
			if v, ok := st.Var(VarTimeZone); !ok || v != "+01:00" {
				t.Fatalf("time_zone %q, %v", v, ok)
			}
			if ch := st.Since(mark); !ch.Vars.Has(VarTimeZone) || ch.Vars.Has(VarSQLMode) || !ch.State || ch.Schema || ch.GTID {
				t.Fatalf("Since = %+v, want time_zone and a state change", ch)
			}
			mark = st.Mark()
			// A result's end carries session state too; the rows read as ever.
			if v, err := OneValue(ctx, c, "SELECT 1"); err != nil || v != "1" {
				t.Fatalf("SELECT 1 = %q, %v", v, err)
			}
			if _, err := c.ExecContext(ctx, "USE other", nil); err != nil {
				t.Fatal(err)
			}
			if ch := st.Since(mark); !ch.State || !ch.Schema || ch.Vars != 0 || ch.GTID {
				t.Fatalf("Since = %+v, want a state change and the schema", ch)
			}
			if s, ok := st.Schema(); !ok || s != "other" {
				t.Fatalf("schema %q, %v", s, ok)
			}
			if _, err := c.ExecContext(ctx, "INSERT INTO t VALUES (2)", nil); err != nil {
				t.Fatal(err)
			}
			if g, _ := st.GTID(); g != testUUID+":2" {
				t.Fatalf("GTID %q after the second write", g)
			}
			if n := len(f.got()); n != 7 {
				t.Fatalf("the server got %d queries, want 7: the tracking request and the question for the base go once", n)
			}
			if tls, z := f.srv.TLSConns(), f.srv.CompressedConns(); (tls > 0) != (tr.srv.TLS != nil) || (z > 0) != tr.srv.Compress {
				t.Fatalf("%d TLS and %d compressed connections: the transport is not the one under test", tls, z)
			}
		})
	}
}

// TestSessionTrackingOff: a server without the capability gets no request and lbd tracks
// nothing (lbdtest's go-mysql-server is one); a probe connection (not the application's)
// negotiates tracking but sends no request.
func TestSessionTrackingOff(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	srv := mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
		mu.Lock()
		queries = append(queries, q)
		mu.Unlock()
		return mysqlfake.DefaultAnswer(q)
	}})
	r := newRig(t, srv.Addr())
	c := r.dial(t)
	if _, err := c.ExecContext(context.Background(), "INSERT 1", nil); err != nil {
		t.Fatal(err)
	}
	if st := c.Session(); st.Negotiated() || st.TracksGTIDs() || len(queries) != 1 {
		t.Fatalf("negotiated %v, tracks %v, queries %q; want nothing tracked, one query", st.Negotiated(), st.TracksGTIDs(), queries)
	}

	f := startTrackingFake(t, mysqlfake.Config{}, nil)
	pr := newRig(t, f.srv.Addr())
	dc, sock, err := Connect(context.Background(), pr.node, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	defer dc.Close()
	if v, err := OneValue(context.Background(), dc, "SELECT 1"); err != nil || v != "1" {
		t.Fatal(v, err)
	}
	if got := f.got(); len(got) != 1 || !sock.session.Negotiated() || sock.session.TracksGTIDs() {
		t.Fatalf("a probe connection: queries %q, negotiated %v, tracking %v", got, sock.session.Negotiated(), sock.session.TracksGTIDs())
	}
}

// TestSessionTrackingRefused: a server that refuses the request (MariaDB refuses a variable it
// does not know) leaves the session untracked but working; lbd then asks for positions itself.
func TestSessionTrackingRefused(t *testing.T) {
	f := startTrackingFake(t, mysqlfake.Config{}, func(q string) *mysqlfake.Result {
		if strings.Contains(q, "session_track") {
			return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1193, State: "HY000", Message: "Unknown system variable 'session_track_gtids'"}}
		}
		return nil
	})
	c := newRig(t, f.srv.Addr()).dial(t)
	if v, err := OneValue(context.Background(), c, "SELECT 1"); err != nil || v != "1" {
		t.Fatalf("SELECT 1 = %q, %v", v, err)
	}
	if st := c.Session(); st.TracksGTIDs() || st.Refused() != 1193 || !st.Negotiated() {
		t.Fatalf("tracks %v, refused %d", st.TracksGTIDs(), st.Refused())
	}
}

// TestSessionTrackingOverridden: a statement of the session naming session_track_* may change
// what the server reports; lbd no longer trusts that a write's GTID would be reported.
func TestSessionTrackingOverridden(t *testing.T) {
	f := startTrackingFake(t, mysqlfake.Config{}, nil)
	c := newRig(t, f.srv.Addr()).dial(t)
	ctx := context.Background()
	if _, err := c.ExecContext(ctx, "INSERT 1", nil); err != nil || !c.Session().TracksGTIDs() {
		t.Fatal(err, c.Session().TracksGTIDs())
	}
	if _, err := c.ExecContext(ctx, "SET @@SESSION.Session_Track_GTIDs = OFF", nil); err != nil {
		t.Fatal(err)
	}
	if st := c.Session(); st.TracksGTIDs() || !st.Overridden() {
		t.Fatalf("after the session changed its tracking: tracks %v, overridden %v", st.TracksGTIDs(), st.Overridden())
	}
	for _, q := range []string{"SELECT session_trac", "SELECT a_b FROM session_x", "SET x_session_trackY = 1"} {
		if mentionsSessionTrack([]byte(q)) != strings.Contains(strings.ToLower(q), "session_track") {
			t.Errorf("mentionsSessionTrack(%q) = %v", q, !strings.Contains(q, "session_track"))
		}
	}
}

// TestHostileSessionState: a session-state block that is malformed, too large, or carries a
// value lbd refuses (a GTID that is no GTID, quotes in a setting) breaks its connection as a
// protocol violation, on every transport: the statement fails with lbd.ErrProtocol, the
// connection is closed and retired, and nothing panics.
func TestHostileSessionState(t *testing.T) {
	okWith := func(tail ...byte) []byte { // an OK packet announcing a block, then tail
		return append([]byte{0, 0, 0, 0x02, 0x40, 0, 0}, tail...)
	}
	for _, tc := range []struct {
		name    string
		session []byte // the block the server reports for the INSERT, or
		packet  []byte // the whole OK packet's payload
		want    string
	}{
		{name: "an injection for a GTID", session: gtidEntry(testUUID + ":1'); DROP TABLE t; --"), want: "GTID"},
		{name: "MariaDB's last_gtid not a GTID", session: varEntry("last_gtid", "0-1-x"), want: "GTID"},
		{name: "a negative GTID", session: varEntry("last_gtid", "-1-1-1"), want: "GTID"},
		{name: "a GTID beyond 64 bits", session: varEntry("last_gtid", "0-1-99999999999999999999"), want: "GTID"},
		{name: "a huge GTID set", session: gtidEntry(testUUID + strings.Repeat(":1", wire.MaxSessionOK/2)), want: "past the 65536 bytes"},
		{name: "a quote in a setting", session: varEntry("time_zone", "+01:00' OR '1"), want: "time_zone"},
		{name: "a setting's long value", session: varEntry("sql_mode", strings.Repeat("A", 2000)), want: "sql_mode"},
		{name: "a control character in the schema", session: trackEntry(wire.TrackSchema, mysqlfake.LenencString(nil, "db\x00x")), want: "schema"},
		{name: "a block past its packet", packet: okWith(0, 100, 1, 2), want: "left"},
		{name: "an entry past its block", packet: okWith(0, 3, wire.TrackSchema, 9, 1), want: "left"},
		{name: "a block cut in its length", packet: okWith(0, 0xfd, 1), want: "cut short"},
		{name: "a flag without its block", packet: okWith(), want: "info"},
		{name: "bytes after the block", packet: okWith(0, 3, wire.TrackStateChange, 1, '1', 'x'), want: "follow"},
	} {
		for _, tr := range transports(t) {
			t.Run(tc.name+"/"+tr.name, func(t *testing.T) {
				f := startTrackingFake(t, tr.srv, func(q string) *mysqlfake.Result {
					if q == "INSERT hostile" && tc.session != nil {
						return &mysqlfake.Result{Session: tc.session}
					}
					return nil
				})
				if tc.packet != nil {
					f.srv.AddFault(mysqlfake.Fault{Phase: mysqlfake.PhaseAnswer, Match: mysqlfake.QueryContains("INSERT hostile"), Bytes: mysqlfake.Payload(tc.packet)})
				}
				r := newRigWith(t, f.srv.Addr(), tr.edit)
				c := r.dial(t)
				ctx := context.Background()
				if _, err := c.ExecContext(ctx, "INSERT 1", nil); err != nil {
					t.Fatal(err)
				}
				_, err := c.ExecContext(ctx, "INSERT hostile", nil)
				if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want lbd.ErrProtocol naming %q", err, tc.want)
				}
				if !c.Retired() {
					t.Fatal("the connection was not retired")
				}
				if _, err := c.ExecContext(ctx, "SELECT 1", nil); !errors.Is(err, driver.ErrBadConn) {
					t.Fatalf("the broken connection answered %v, want driver.ErrBadConn", err)
				}
				r.hooks.mu.Lock()
				defer r.hooks.mu.Unlock()
				if len(r.hooks.broken) != 1 {
					t.Fatalf("Broken heard %v", r.hooks.broken)
				}
			})
		}
	}
}

// TestHostileAnswerToTheRequest: what answers lbd's tracking request is checked as any packet
// is: an answer that is not an OK or ERR, or a packet larger than lbd reads aside, breaks the
// connection at its first statement.
func TestHostileAnswerToTheRequest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes func([]byte) []byte
		want  string
	}{
		{"a result header", mysqlfake.Payload([]byte{1}), "OK or ERR"},
		{"a huge packet", mysqlfake.Raw([]byte{0xff, 0xff, 0xff, 1}), "bytes answered"},
		{"a cut OK", mysqlfake.Payload([]byte{0, 0xfc}), "truncated OK"},
		{"a bad block", mysqlfake.Payload([]byte{0, 0, 0, 0x02, 0x40, 0, 0, 0, 5, 1}), "left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := startTrackingFake(t, mysqlfake.Config{}, nil)
			f.srv.AddFault(mysqlfake.Fault{Phase: mysqlfake.PhaseAnswer, Match: mysqlfake.QueryContains("session_track"), Bytes: tc.bytes})
			c := newRig(t, f.srv.Addr()).dial(t)
			_, err := c.ExecContext(context.Background(), "INSERT 1", nil)
			if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want lbd.ErrProtocol naming %q", err, tc.want)
			}
		})
	}
}

// TestSessionTrackingMariaDB runs session tracking against the real server in
// LBD_TEST_MYSQL_DSN, plain and compressed: the request is accepted, the settings a statement
// changes are reported with it, and, when the server writes a binary log (the primary of
// .ci/mariadb-pair, LBD_TEST_MARIADB_PRIMARY_DSN), each write's GTID is the one @@last_gtid
// gives.
func TestSessionTrackingMariaDB(t *testing.T) {
	dsn := os.Getenv("LBD_TEST_MARIADB_PRIMARY_DSN")
	if dsn == "" {
		dsn = os.Getenv("LBD_TEST_MYSQL_DSN")
	}
	if dsn == "" {
		t.Skip("neither LBD_TEST_MARIADB_PRIMARY_DSN nor LBD_TEST_MYSQL_DSN is set")
	}
	my, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			r := newRigWith(t, my.Addr, func(c *mysql.Config) {
				c.User, c.Passwd, c.DBName = my.User, my.Passwd, my.DBName
				c.Apply(mysql.EnableCompression(compress))
			})
			c := r.dial(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st := c.Session()
			if !st.Negotiated() {
				t.Fatal("the server did not offer session tracking")
			}
			if s, ok := st.Schema(); !ok || s != my.DBName {
				t.Errorf("the login reported schema %q (%v), want %q", s, ok, my.DBName)
			}
			var logBin string
			if logBin, err = OneValue(ctx, c, "SELECT @@log_bin"); err != nil {
				t.Fatal(err)
			}
			if !st.TracksGTIDs() || st.Refused() != 0 {
				t.Fatalf("tracks GTIDs %v, refused %d", st.TracksGTIDs(), st.Refused())
			}
			mark := st.Mark()
			for _, q := range []string{"SET time_zone = '+02:00'", "SET sql_mode = 'ANSI_QUOTES'", "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "SET autocommit = 0", "SET autocommit = 1", "SET NAMES latin1"} {
				if _, err := c.ExecContext(ctx, q, nil); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			ch := st.Since(mark)
			for v, want := range map[SessionVar]string{VarTimeZone: "+02:00", VarSQLMode: "ANSI_QUOTES", VarTransactionIsolation: "READ-COMMITTED", VarAutocommit: "ON", VarCharacterSetClient: "latin1"} {
				if got, ok := st.Var(v); !ok || got != want || !ch.Vars.Has(v) {
					t.Errorf("%s: %q (%v, changed %v), want %q", st.VarName(v), got, ok, ch.Vars.Has(v), want)
				}
			}
			if !ch.State || ch.GTID {
				t.Errorf("Since = %+v, want a state change and no GTID", ch)
			}
			table := fmt.Sprintf("lbd_track_%d", time.Now().UnixNano())
			for _, q := range []string{"CREATE TABLE " + table + " (a INT)", "INSERT INTO " + table + " VALUES (1)"} {
				mark = st.Mark()
				if _, err := c.ExecContext(ctx, q, nil); err != nil {
					t.Fatal(err)
				}
				reported, _ := st.GTID()
				asked, err := OneValue(ctx, c, "SELECT @@last_gtid")
				if err != nil {
					t.Fatal(err)
				}
				if reported != asked || (logBin == "1") != st.Since(mark).GTID {
					t.Fatalf("%s: reported GTID %q (new: %v), @@last_gtid %q, log_bin %s", q, reported, st.Since(mark).GTID, asked, logBin)
				}
			}
			c.ExecContext(ctx, "DROP TABLE "+table, nil)
		})
	}
}

// TestCallerReadOnlyOnMariaDB: on the real server in LBD_TEST_MYSQL_DSN, a write refused with
// 1792 in a transaction the caller made read-only, by START TRANSACTION READ ONLY (the status
// flags say so) or by the session's own tx_read_only (session tracking says so), is the
// caller's; the same connection outside them is not read-only.
func TestCallerReadOnlyOnMariaDB(t *testing.T) {
	dsn := os.Getenv("LBD_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Skip("LBD_TEST_MYSQL_DSN is not set")
	}
	my, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	r := newRigWith(t, my.Addr, func(c *mysql.Config) { c.User, c.Passwd, c.DBName = my.User, my.Passwd, my.DBName })
	c := r.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	table := fmt.Sprintf("lbd_ro_%d", time.Now().UnixNano())
	if _, err := c.ExecContext(ctx, "CREATE TABLE "+table+" (a INT)", nil); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(context.Background(), "DROP TABLE "+table, nil)
	insert := func() {
		t.Helper()
		_, err := c.ExecContext(ctx, "INSERT INTO "+table+" VALUES (1)", nil)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1792 {
			t.Fatalf("the write answered %v, want 1792", err)
		}
	}
	if c.CallerReadOnly() {
		t.Fatal("a fresh connection is read-only")
	}
	if _, err := c.ExecContext(ctx, "START TRANSACTION READ ONLY", nil); err != nil {
		t.Fatal(err)
	}
	insert()
	if !c.CallerReadOnly() {
		t.Fatal("START TRANSACTION READ ONLY: the refusal is not the caller's")
	}
	if _, err := c.ExecContext(ctx, "ROLLBACK", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "SET SESSION tx_read_only = 1", nil); err != nil {
		t.Fatal(err)
	}
	insert()
	if !c.CallerReadOnly() {
		t.Fatal("SET SESSION tx_read_only = 1: the refusal is not the caller's")
	}
	if _, err := c.ExecContext(ctx, "SET SESSION tx_read_only = 0", nil); err != nil || c.CallerReadOnly() {
		t.Fatalf("after tx_read_only = 0: %v, caller read-only %v", err, c.CallerReadOnly())
	}
}

// FuzzSessionState feeds arbitrary OK packets through the guard's reader into a SessionState:
// nothing panics, and whatever the state accepted is what lbd can use as it is: a GTID that
// parses as its flavor's, setting values without quotes or control characters.
func FuzzSessionState(f *testing.F) {
	ok := func(block []byte) []byte {
		return append(mysqlfake.LenencInt([]byte{0, 0, 0, 0x02, 0x40, 0, 0, 0}, uint64(len(block))), block...)
	}
	f.Add(ok(varEntry("last_gtid", "0-1-10")))
	f.Add(ok(gtidEntry(testUUID + ":1-5:7")))
	f.Add(ok(append(varEntry("time_zone", "+01:00"), trackEntry(wire.TrackStateChange, []byte("1"))...)))
	f.Add(ok(trackEntry(wire.TrackSchema, mysqlfake.LenencString(nil, "db"))))
	f.Add(ok(varEntry("last_gtid", "0-1-1'; DROP TABLE t")))
	f.Add(ok(varEntry("tx_isolation", "READ-COMMITTED")))
	f.Fuzz(func(t *testing.T, packet []byte) {
		var st SessionState
		st.negotiated, st.answered = true, true
		block, err := wire.SessionBlock(packet)
		if err != nil {
			return
		}
		if wire.SessionEntries(block, st.SessionEntry) != nil {
			return
		}
		st.SessionBlockEnd()
		if g, fl := st.GTID(); g != "" {
			if _, err := fl.Parse(g); err != nil && !errors.Is(err, causal.ErrTooLong) {
				t.Fatalf("accepted GTID %q does not parse: %v", g, err)
			}
		}
		for v := range numVars {
			if val, ok := st.Var(v); ok && val != Implied && strings.ContainsAny(val, "'\"\\\\`\x00\n") {
				t.Fatalf("accepted %s = %q", v, val)
			}
		}
	})
}
