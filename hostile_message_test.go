package lbd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// hugeMessage is an 8 MiB error text, sixteen thousand times MySQL's own limit, of two-byte
// characters so that a cut in the middle of one would show as invalid UTF-8.
var hugeMessage = "hostile " + strings.Repeat("é", 4<<20)

// keptBound is the most any one text lbd keeps about an error may hold: the peer's message cut
// to MaxErrorMessage, with lbd's own words around it.
const keptBound = MaxErrorMessage + 512

// checkBounded fails t when text, which lbd kept or printed, is longer than limit, or carries
// an invalid UTF-8 sequence (a message cut inside a character).
func checkBounded(t *testing.T, what, text string, limit int) {
	t.Helper()
	if len(text) > limit {
		t.Errorf("%s is %d bytes, more than %d: %.120q...", what, len(text), limit, text)
	}
	if !utf8.ValidString(text) {
		t.Errorf("%s is not valid UTF-8 (a message cut inside a character)", what)
	}
}

// TestHostileLongErrorMessage has a proxy answer with an 8 MiB ERR message, first to the
// probe, then to a statement (in both balance modes). What lbd keeps and prints about it stays
// bounded: the error the application gets, NodeStats.LastError, Stats.Recent and the log line
// of the transition. (The status page's JSON is status' TestJSONBoundedWithHugeErrorMessage.)
func TestHostileLongErrorMessage(t *testing.T) {
	for _, path := range []string{"probe", "statement", "statement/balance=statement"} {
		t.Run(path, func(t *testing.T) {
			params := ""
			if path == "statement/balance=statement" {
				params = "balance=statement"
			}
			match := probeQuery
			number := uint16(1105) // ER_UNKNOWN_ERROR: the probe fails on any error
			if path != "probe" {
				match = "/* hostile */"
				number = 8001 // OceanBase 8000-8999: fatal to the connection, so it is held against the node
			}
			healthy := mysqlfake.Start(t, mysqlfake.Config{})
			hostile := mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
				if strings.Contains(q, match) {
					return &mysqlfake.Result{Err: &mysqlfake.Error{Number: number, State: "HY000", Message: hugeMessage}}
				}
				return mysqlfake.DefaultAnswer(q)
			}})
			logs := &logRecorder{}
			interval := time.Hour // the statement case: no probe meets the hostile node's answer
			if path == "probe" {
				interval = 2 * time.Second // and so the probe's timeout: 8 MiB take time under -race
			}
			// retryReads off: the application must see the proxy's error, not a read run again
			// on the healthy node.
			opts := append(fast(interval, interval, time.Hour, logs), WithFatalErrorThreshold(1), WithRetryReads(false))
			db, c := openFakeDB(t, []*mysqlfake.Server{hostile, healthy}, params, opts...)

			if path != "probe" {
				// The first connection goes to the first listed node, the hostile one; in
				// statement mode the healthy node may serve the first statements.
				var err error
				for i := 0; i < 10 && err == nil; i++ {
					var v string
					err = db.QueryRowContext(context.Background(), "/* hostile */ SELECT 1").Scan(&v)
				}
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != number {
					t.Fatalf("the statement: %v; want the proxy's error %d", err, number)
				}
				checkBounded(t, "the application's error message", me.Message, MaxErrorMessage)
				if !strings.HasPrefix(me.Message, "hostile é") || !strings.HasSuffix(me.Message, "...") {
					t.Errorf("the message is %.40q...%q; want the proxy's text, cut and ending in \"...\"", me.Message, me.Message[max(len(me.Message)-8, 0):])
				}
				checkBounded(t, "the application's error", err.Error(), keptBound)
			}
			waitFor(t, 10*time.Second, "the hostile node to be taken out", func() bool {
				s, _ := nodeState(c, hostile.Addr())
				return s == StateDown
			})

			st := c.Stats()
			ns, _ := st.Node(hostile.Addr())
			if path == "probe" {
				if !strings.Contains(ns.LastError, "hostile é") {
					t.Errorf("LastError = %.120q; want the probe's error", ns.LastError)
				}
			}
			checkBounded(t, "NodeStats.LastError", ns.LastError, keptBound)
			found := false
			for _, tr := range st.Recent {
				checkBounded(t, "a transition's reason", tr.Reason, keptBound)
				found = found || tr.Node == hostile.Addr() && strings.Contains(tr.Reason, "hostile é")
			}
			if !found {
				t.Errorf("Stats.Recent has no transition of %s carrying the proxy's message: %+v", hostile.Addr(), st.Recent)
			}
			var lines []string
			waitFor(t, 5*time.Second, "the transition's log line", func() bool {
				lines = logs.Containing("node state changed", hostile.Addr())
				return len(lines) > 0
			})
			for _, l := range logs.Lines() {
				checkBounded(t, "a log line", l, 2*keptBound)
			}
			if !strings.Contains(lines[0], "hostile é") {
				t.Errorf("the log line %.200q does not carry the proxy's message", lines[0])
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
