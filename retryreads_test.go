package lbd

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// The statements of the read-retry tests. Each names table t, so the faults below can match
// them and nothing lbd sends on its own.
const (
	pointRead   = "SELECT v FROM t WHERE id = 1"
	rangeRead   = "SELECT v FROM t WHERE id > 0"
	stalledRead = "SELECT v FROM t WHERE id = 3"
	brokenRead  = "SELECT v FROM t WHERE id = 4" // fails on every node
	aWrite      = "UPDATE t SET v = 2 WHERE id = 1"
	unknownFunc = "SELECT f(v) FROM t WHERE id = 1" // f may write: not provably a read
)

// runLog counts the statements each fake server received, whether it answered or not.
type runLog struct {
	mu   sync.Mutex
	seen map[string]int
}

func (l *runLog) answer(q string) *mysqlfake.Result {
	l.mu.Lock()
	if l.seen == nil {
		l.seen = map[string]int{}
	}
	l.seen[q]++
	l.mu.Unlock()
	if strings.Contains(q, " FROM t ") {
		return &mysqlfake.Result{Columns: []string{"v"}, Rows: [][]string{{"1"}, {"2"}}}
	}
	return mysqlfake.DefaultAnswer(q)
}

func (l *runLog) count(q string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seen[q]
}

// retryFleet is three fake servers of which the first fails every statement on table t by
// closing the connection before any answer (a proxy that dies under the statement), and every
// server fails brokenRead. The first connection goes to the first server.
type retryFleet struct {
	srvs []*mysqlfake.Server
	logs []*runLog
	db   *sql.DB
	c    *Connector
}

// runs returns how many servers' logs hold q, summed.
func (f *retryFleet) runs(q string) int {
	n := 0
	for _, l := range f.logs {
		n += l.count(q)
	}
	return n
}

func newRetryFleet(t *testing.T, mode string, opts ...Option) *retryFleet {
	t.Helper()
	f := &retryFleet{}
	for i := range 3 {
		l := &runLog{}
		s := mysqlfake.Start(t, mysqlfake.Config{Answer: l.answer})
		drop := func([]byte) []byte { return nil }
		s.AddFault(mysqlfake.Fault{Name: "command/close", Phase: mysqlfake.PhaseCommand, Bytes: drop, After: mysqlfake.Close,
			Match: func(c mysqlfake.Command) bool {
				if c.Op == mysqlfake.ComStmtPrepare {
					return false // a prepared read fails at its execution
				}
				return c.Text == brokenRead || i == 0 && strings.Contains(c.Text, " t ") && c.Text != rangeRead && c.Text != stalledRead
			}})
		if i == 0 {
			// rangeRead's rows all arrive, but its end never does: the caller has rows when
			// the connection dies.
			s.AddFault(mysqlfake.Fault{Name: "end/close", Phase: mysqlfake.PhaseResultEnd, Bytes: drop, After: mysqlfake.Close,
				Match: func(c mysqlfake.Command) bool { return c.Text == rangeRead }})
			s.AddFault(mysqlfake.Fault{Name: "command/stall", Phase: mysqlfake.PhaseCommand, Bytes: drop, After: mysqlfake.Stall,
				Match: func(c mysqlfake.Command) bool { return c.Text == stalledRead }})
		}
		f.srvs, f.logs = append(f.srvs, s), append(f.logs, l)
	}
	f.db, f.c = openFakeDB(t, f.srvs, "balance="+mode, append(quiet(), opts...)...)
	return f
}

// mustFailAlone checks that a statement failed and ran on the first server only.
func (f *retryFleet) mustFailAlone(t *testing.T, q string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%q succeeded; the first server fails it", q)
	}
	if n := f.logs[0].count(q); n != 1 {
		t.Fatalf("%q reached the first server %d times, want 1", q, n)
	}
	if n := f.runs(q); n != 1 {
		t.Fatalf("%q ran %d times over the fleet, want once: %v", q, n, err)
	}
	if r := f.c.Stats().Retries.Reads; r != 0 {
		t.Fatalf("Stats.Retries.Reads = %d, want 0", r)
	}
}

// TestReadRetries: with retryReads, a read whose node failed it before any row reached the
// caller runs once more on another node, in both balance modes; and each thing that must
// never run again does not.
func TestReadRetries(t *testing.T) {
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			t.Run("a read runs once more on another node", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				var v string
				if err := f.db.QueryRow(pointRead).Scan(&v); err != nil || v != "1" {
					t.Fatalf("read: %q, %v; want 1 after one run again", v, err)
				}
				if f.logs[0].count(pointRead) != 1 || f.runs(pointRead) != 2 {
					t.Fatalf("the read reached the first server %d times and the fleet %d, want 1 and 2", f.logs[0].count(pointRead), f.runs(pointRead))
				}
				if r := f.c.Stats().Retries; r.Reads != 1 || r.Refused != 0 {
					t.Fatalf("Stats.Retries = %+v, want one read and none refused", r)
				}
				// The connection the read failed on is not used again; the pool works on.
				for range 5 {
					if err := f.db.Ping(); err != nil {
						t.Fatal(err)
					}
				}
			})
			t.Run("a read with prepared arguments runs once more", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				var v string
				if err := f.db.QueryRow("SELECT v FROM t WHERE id = ?", 1).Scan(&v); err != nil || v != "1" {
					t.Fatalf("read: %q, %v", v, err)
				}
				if n := f.runs(pointRead); n != 2 { // the fake logs an execution with its arguments bound
					t.Fatalf("the prepared read ran %d times, want 2", n)
				}
			})
			t.Run("off with retryReads=false", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(false))
				var v string
				f.mustFailAlone(t, pointRead, f.db.QueryRow(pointRead).Scan(&v))
			})
			t.Run("never a write", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				_, err := f.db.Exec(aWrite)
				f.mustFailAlone(t, aWrite, err)
			})
			t.Run("never a write read as rows", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				rows, err := f.db.Query(aWrite)
				if err == nil {
					rows.Close()
				}
				f.mustFailAlone(t, aWrite, err)
			})
			t.Run("never a text not proven a read", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				var v string
				f.mustFailAlone(t, unknownFunc, f.db.QueryRow(unknownFunc).Scan(&v))
			})
			t.Run("never inside a transaction", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				tx, err := f.db.Begin()
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				var v string
				f.mustFailAlone(t, pointRead, tx.QueryRow(pointRead).Scan(&v))
			})
			t.Run("never inside a transaction begun by SQL text", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				conn, err := f.db.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := conn.ExecContext(context.Background(), "BEGIN"); err != nil {
					t.Fatal(err)
				}
				var v string
				f.mustFailAlone(t, pointRead, conn.QueryRowContext(context.Background(), pointRead).Scan(&v))
			})
			t.Run("never once rows reached the caller", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				rows, err := f.db.Query(rangeRead)
				if err != nil {
					t.Fatalf("the failure must come after the rows: %v", err)
				}
				got := 0
				for rows.Next() {
					got++
				}
				err = rows.Err()
				rows.Close()
				if got == 0 {
					t.Fatal("no row reached the caller: the case proves nothing")
				}
				f.mustFailAlone(t, rangeRead, err)
			})
			t.Run("never a read its caller gave up on", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				var v string
				err := f.db.QueryRowContext(ctx, stalledRead).Scan(&v)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("err = %v, want the caller's deadline", err)
				}
				f.mustFailAlone(t, stalledRead, err)
			})
			t.Run("once at most", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true))
				var v string
				if err := f.db.QueryRow(brokenRead).Scan(&v); err == nil {
					t.Fatal("a read every node fails succeeded")
				}
				if n := f.runs(brokenRead); n != 2 {
					t.Fatalf("a read every node fails ran %d times, want 2 (once more, no further)", n)
				}
			})
			t.Run("not when the budget is spent", func(t *testing.T) {
				f := newRetryFleet(t, mode, WithRetryReads(true), WithRetryBudget(0, 0))
				var v string
				err := f.db.QueryRow(pointRead).Scan(&v)
				if err == nil {
					t.Fatal("the read succeeded with no retry in the budget")
				}
				if n := f.runs(pointRead); n != 1 {
					t.Fatalf("the read ran %d times, want 1", n)
				}
				if r := f.c.Stats().Retries; r.Refused != 1 || r.Reads != 0 {
					t.Fatalf("Stats.Retries = %+v, want one refused and no read", r)
				}
			})
		})
	}
}
