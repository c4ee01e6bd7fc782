package lbd

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/wire"
)

// trackingAnswers answers as a server that tracks sessions: every setting for lbd's question
// for the base, time_zone for a SET of it, and, for lbd's restore of a logical connection's
// settings, the time zone it sets, or, when refuse is set, error 1298 (a zone the server does
// not know). seen records the statements of the application.
type trackingAnswers struct {
	refuse bool
	mu     sync.Mutex
	seen   []string
}

func fakeVar(name, value string) []byte {
	data := mysqlfake.LenencString(mysqlfake.LenencString(nil, name), value)
	return append(mysqlfake.LenencInt([]byte{wire.TrackSystemVariables}, uint64(len(data))), data...)
}

var stateChanged = []byte{wire.TrackStateChange, 1, '1'}

func (a *trackingAnswers) answer(q string) *mysqlfake.Result {
	switch {
	case strings.HasPrefix(q, "/* lbd session base */"):
		var block []byte
		for _, v := range [][2]string{{"autocommit", "ON"}, {"character_set_client", "utf8mb4"}, {"character_set_connection", "utf8mb4"},
			{"character_set_results", "utf8mb4"}, {"collation_connection", "utf8mb4_general_ci"}, {"sql_mode", ""}, {"time_zone", "SYSTEM"},
			{"transaction_isolation", "REPEATABLE-READ"}, {"transaction_read_only", "OFF"}} {
			block = append(block, fakeVar(v[0], v[1])...)
		}
		return &mysqlfake.Result{Session: append(block, stateChanged...)}
	case strings.HasPrefix(q, "/* lbd session settings */"):
		if a.refuse {
			return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1298, State: "HY000", Message: "Unknown or incorrect time zone"}}
		}
		_, zone, _ := strings.Cut(q, "time_zone = '")
		zone, _, _ = strings.Cut(zone, "'")
		return &mysqlfake.Result{Session: append(fakeVar("time_zone", zone), stateChanged...)}
	case strings.HasPrefix(q, "/* lbd"):
		return nil
	case q == "SET time_zone = '+05:00'":
		a.note(q)
		return &mysqlfake.Result{Session: append(fakeVar("time_zone", "+05:00"), stateChanged...)}
	}
	a.note(q)
	return mysqlfake.DefaultAnswer(q)
}

func (a *trackingAnswers) note(q string) {
	a.mu.Lock()
	a.seen = append(a.seen, q)
	a.mu.Unlock()
}

func (a *trackingAnswers) count(q string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, s := range a.seen {
		if s == q {
			n++
		}
	}
	return n
}

// TestRestoreRefusedFailsTheStatement: a held session set its time zone on one server; on the
// other, which refuses that setting, the statements balanced there fail with an error saying
// so, and none of them is sent there: a statement never runs without its session's settings.
// On the first server they run.
func TestRestoreRefusedFailsTheStatement(t *testing.T) {
	answers := []*trackingAnswers{{}, {refuse: true}}
	var srvs []*mysqlfake.Server
	for _, a := range answers {
		srvs = append(srvs, mysqlfake.Start(t, mysqlfake.Config{SessionTrack: true, DeprecateEOF: true, Answer: a.answer}))
	}
	db, _ := openFakeDB(t, srvs, "balance=statement", quiet()...)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET time_zone = '+05:00'"); err != nil {
		t.Fatal(err)
	}
	if answers[0].count("SET time_zone = '+05:00'") != 1 {
		t.Fatal("the SET did not run on the first listed server")
	}
	const stmt = "/* app */ SELECT 1"
	failed := 0
	for range 20 {
		_, err := conn.ExecContext(ctx, stmt)
		switch {
		case err == nil:
		case strings.Contains(err.Error(), "settings could not be set on proxy "+srvs[1].Addr()) && strings.Contains(err.Error(), "1298"):
			failed++
		default:
			t.Fatalf("a statement failed with %v", err)
		}
	}
	if ran := answers[0].count(stmt); failed == 0 || ran == 0 || ran+failed != 20 {
		t.Fatalf("%d statements ran on the first server and %d failed; want both, 20 in all", ran, failed)
	}
	if n := answers[1].count(stmt); n != 0 {
		t.Fatalf("%d statements ran on the server that refused the session's time zone", n)
	}
}
