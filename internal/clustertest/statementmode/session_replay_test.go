package statementmode

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// Statement mode's held sessions: their statements are balanced one by one; the settings
// session tracking reports are set again where a statement runs; other session state pins,
// and a pinned physical connection is reset, not closed, when database/sql hands its logical
// connection out again.

// onRealServer skips t unless the proxies relay to a real server (LBD_TEST_MYSQL_DSN), which
// reports session state: lbdtest's in-memory server does not.
func onRealServer(t *testing.T) {
	t.Helper()
	if os.Getenv(lbdtest.EnvBackendDSN) == "" {
		t.Skip("LBD_TEST_MYSQL_DSN is not set: the in-memory server does not track sessions")
	}
}

// sessionCluster opens statement mode over n relays.
func sessionCluster(t *testing.T, n int) (*lbdtest.Cluster, *lbd.Connector, *sql.DB) {
	t.Helper()
	cl := lbdtest.NewCluster(t, n)
	c, err := lbd.NewConnector(cl.DSN("balance=statement"), clusterkit.Fast(100*time.Millisecond, time.Second, time.Hour, &testkit.Logs{})...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return cl, c, db
}

// textCounts returns how many times each proxy of cl received text.
func textCounts(cl *lbdtest.Cluster, text string) []int64 {
	var out []int64
	for _, p := range cl.Proxies() {
		out = append(out, int64(countText(p, text)))
	}
	return out
}

// dials returns the Connector's successful dials so far, over every node.
func dials(c *lbd.Connector) uint64 {
	var n uint64
	for _, ns := range c.Stats().Nodes {
		n += ns.Dials
	}
	return n
}

// TestHeldSessionTimeZoneSpreads: a *sql.Conn that set its time zone runs 1000 statements
// spread evenly over three proxies in front of one MariaDB (CV at most 5 %), and every one of
// them sees that time zone.
func TestHeldSessionTimeZoneSpreads(t *testing.T) {
	onRealServer(t)
	cl, _, db := sessionCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET time_zone = '+05:00'"); err != nil {
		t.Fatal(err)
	}
	const query, total = "/* held */ SELECT @@time_zone", 1000
	for i := range total {
		var tz string
		if err := conn.QueryRowContext(ctx, query).Scan(&tz); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
		if tz != "+05:00" {
			t.Fatalf("statement %d saw time zone %q, want +05:00", i, tz)
		}
	}
	counts := textCounts(cl, query)
	cv := clusterkit.ShareCV(counts)
	t.Logf("1000 statements of a held session with SET time_zone: per proxy %v, CV %.3f", counts, cv)
	if cv > clusterkit.MaxShareCV {
		t.Fatalf("per proxy %v: CV %.3f, more than %.2f", counts, cv, clusterkit.MaxShareCV)
	}
}

// TestSessionsStartCleanWithoutDials: 1000 sessions (*sql.Conn, one after another) each set a
// user variable, which pins; each starts without the previous one's, and, once each proxy has
// a connection, they cost at most one dial in all: the pinned physical connection is reset
// and reused.
func TestSessionsStartCleanWithoutDials(t *testing.T) {
	onRealServer(t)
	_, c, db := sessionCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	session := func(i int) {
		t.Helper()
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var fresh bool
		if err := conn.QueryRowContext(ctx, "SELECT @lbd_v IS NULL").Scan(&fresh); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if !fresh {
			t.Fatalf("session %d began with the previous session's user variable", i)
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET @lbd_v = %d", i)); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		var v int
		if err := conn.QueryRowContext(ctx, "SELECT @lbd_v").Scan(&v); err != nil || v != i {
			t.Fatalf("session %d read its variable back as %d, %v", i, v, err)
		}
	}
	for i := range 10 { // every proxy gets its connection
		session(i)
	}
	before := dials(c)
	for i := range 1000 {
		session(10 + i)
	}
	got := dials(c) - before
	t.Logf("1000 sessions with a user variable: %d dials (%d in all)", got, dials(c))
	if got > 1 {
		t.Fatalf("1000 sessions with a user variable cost %d dials, want at most 1", got)
	}
}

// TestSessionSetKinds measures, for a SET of each kind, what 1000 sessions cost in dials,
// and checks that each session sees its own setting and starts with the connection's own.
func TestSessionSetKinds(t *testing.T) {
	onRealServer(t)
	for _, kind := range []struct {
		name, set, read, want, fresh string
	}{
		{"time_zone", "SET time_zone = '+05:00'", "SELECT @@time_zone", "+05:00", "SYSTEM"},
		{"names", "SET NAMES latin1", "SELECT @@character_set_client", "latin1", "utf8mb4"},
		{"user variable", "SET @lbd_k = 'x'", "SELECT IFNULL(@lbd_k, 'none')", "x", "none"},
		{"sql_mode", "SET sql_mode = 'ANSI_QUOTES'", "SELECT @@sql_mode", "ANSI_QUOTES", ""},
		{"isolation", "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED", "SELECT @@tx_isolation", "READ-COMMITTED", ""},
		{"schema", "USE information_schema", "SELECT DATABASE()", "information_schema", ""},
		// MariaDB does not report the collation SET NAMES ... COLLATE sets: it pins.
		{"names collate", "SET NAMES latin1 COLLATE latin1_german1_ci", "SELECT @@collation_connection", "latin1_german1_ci", ""},
	} {
		t.Run(kind.name, func(t *testing.T) {
			cl, c, db := sessionCluster(t, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var fresh string
			if err := db.QueryRowContext(ctx, kind.read).Scan(&fresh); err != nil {
				t.Fatal(err)
			}
			if kind.fresh != "" && fresh != kind.fresh {
				t.Fatalf("%s answers %q on a fresh session, want %q", kind.read, fresh, kind.fresh)
			}
			session := func() {
				conn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				var v string
				if err := conn.QueryRowContext(ctx, kind.read).Scan(&v); err != nil || v != fresh {
					t.Fatalf("a session began with %s = %q (%v), want %q", kind.read, v, err, fresh)
				}
				if _, err := conn.ExecContext(ctx, kind.set); err != nil {
					t.Fatal(err)
				}
				for range 3 {
					if err := conn.QueryRowContext(ctx, kind.read).Scan(&v); err != nil || v != kind.want {
						t.Fatalf("after %s: %s = %q (%v), want %q", kind.set, kind.read, v, err, kind.want)
					}
				}
			}
			for range 10 {
				session()
			}
			before := dials(c)
			for range 1000 {
				session()
			}
			reads := textCounts(cl, kind.read)
			t.Logf("%s: 1000 sessions cost %d dials; the reads per proxy %v", kind.set, dials(c)-before, reads)
			if got := dials(c) - before; got > 1 {
				t.Fatalf("1000 sessions with %s cost %d dials, want at most 1", kind.set, got)
			}
		})
	}
}

// TestHeldSessionWithoutTracking: over lbdtest's in-memory server, which does not track
// sessions, a held session's statements spread over the proxies, and a SET pins them all to
// one as before.
func TestHeldSessionWithoutTracking(t *testing.T) {
	if os.Getenv(lbdtest.EnvBackendDSN) != "" {
		t.Skip("the proxies relay to a real server, which tracks sessions")
	}
	cl, _, db := sessionCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const plain, pinned = "/* plain */ SELECT 1", "/* pinned */ SELECT 1"
	run := func(q string) {
		for i := range 600 {
			var one int
			if err := conn.QueryRowContext(ctx, q).Scan(&one); err != nil {
				t.Fatalf("%s %d: %v", q, i, err)
			}
		}
	}
	run(plain)
	counts := textCounts(cl, plain)
	if cv := clusterkit.ShareCV(counts); cv > clusterkit.MaxShareCV {
		t.Fatalf("a held session's statements per proxy %v: CV %.3f, more than %.2f", counts, cv, clusterkit.MaxShareCV)
	}
	if _, err := conn.ExecContext(ctx, "SET @x = 1"); err != nil {
		t.Fatal(err)
	}
	run(pinned)
	counts = textCounts(cl, pinned)
	busy := 0
	for _, n := range counts {
		if n > 0 {
			busy++
		}
	}
	if busy != 1 {
		t.Fatalf("after a SET without session tracking, statements per proxy %v: want all on one", counts)
	}
}
