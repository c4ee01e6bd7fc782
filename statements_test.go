package lbd

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/nodes"
)

// observed is one statement a statementLog saw, from its start to its end.
type observed struct {
	start, end StatementInfo
	took       time.Duration
	err        error
	ended      bool
}

// statementLog is a StatementObserver that keeps every statement. StatementStart hands a
// context carrying the statement's index; StatementEnd finds its statement by it, so a test
// sees whether each end got the context its start returned.
type statementLog struct {
	mu    sync.Mutex
	stmts []*observed
	bad   []string // contract breaches StatementEnd found
}

type statementKey struct{}

func (l *statementLog) StatementStart(ctx context.Context, s StatementInfo) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stmts = append(l.stmts, &observed{start: s})
	return context.WithValue(ctx, statementKey{}, len(l.stmts)-1)
}

func (l *statementLog) StatementEnd(ctx context.Context, s StatementInfo, took time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := ctx.Value(statementKey{}).(int)
	switch {
	case !ok:
		l.bad = append(l.bad, fmt.Sprintf("%s %q ended without the context its start returned", s.Op, s.Text))
	case l.stmts[i].ended:
		l.bad = append(l.bad, fmt.Sprintf("%s %q ended twice", s.Op, s.Text))
	default:
		o := l.stmts[i]
		o.end, o.took, o.err, o.ended = s, took, err, true
	}
}

// take returns the statements seen so far and forgets them; it fails t on a contract breach or
// a statement not ended.
func (l *statementLog) take(t *testing.T) []*observed {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.bad {
		t.Error(b)
	}
	out := l.stmts
	l.stmts, l.bad = nil, nil
	for _, o := range out {
		if !o.ended {
			t.Errorf("%s %q started and never ended", o.start.Op, o.start.Text)
		}
	}
	return out
}

// openCount reports how many statements started and have not ended.
func (l *statementLog) openCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, o := range l.stmts {
		if !o.ended {
			n++
		}
	}
	return n
}

// want is what a test expects of one observed statement.
type want struct {
	op   StatementOp
	text string
	verb string
	errs bool // it failed
}

// TestStatementObserver runs exec, query, prepare, execute and transactions over two fake
// servers, a primary and a replica, in both balance modes, and checks that the observer hears
// of each statement once, in order, with the node that ran it (the server that received the
// text), that node's role, the verb and the error; and that a query ends when its rows close.
func TestStatementObserver(t *testing.T) {
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			logs := []*queryLog{{}, {}}
			srvs := make([]*mysqlfake.Server, 2)
			for i := range srvs {
				l := logs[i]
				srvs[i] = mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
					if strings.Contains(q, "broken") {
						l.answer(q)
						return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1064, State: "42000", Message: "You have an error in your SQL syntax"}}
					}
					return l.answer(q)
				}})
			}
			obs := &statementLog{}
			dsn := fmt.Sprintf("u:p@lb(%s#primary,%s#replica)/db?timeout=2s&balance=%s", srvs[0].Addr(), srvs[1].Addr(), mode)
			c, err := NewConnector(dsn, append(quiet(), WithLogger(discardLogger()), WithStatementObserver(obs))...)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			t.Cleanup(func() { db.Close() })
			ctx := t.Context()

			// A transaction held open on one node, so that the statements of the other
			// connection go to the other node in either mode.
			held, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := held.ExecContext(ctx, "/* held */ UPDATE t SET a = 1"); err != nil {
				t.Fatal(err)
			}
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()

			if _, err := conn.ExecContext(ctx, "/* e1 */ INSERT INTO t VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			rows, err := conn.QueryContext(ctx, "/* q1 */ SELECT 7")
			if err != nil {
				t.Fatal(err)
			}
			if n := obs.openCount(); n != 1 {
				t.Fatalf("%d statements open while the query's rows are, want 1 (the query)", n)
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if n := obs.openCount(); n != 0 {
				t.Fatalf("%d statements open once the rows closed, want 0", n)
			}
			_, broken := conn.ExecContext(ctx, "/* e2 */ SELECT broken FROM t")
			var me *mysql.MySQLError
			if !errors.As(broken, &me) || me.Number != 1064 {
				t.Fatalf("the broken statement answered %v, want error 1064", broken)
			}
			st, err := conn.PrepareContext(ctx, "/* p1 */ SELECT ?")
			if err != nil {
				t.Fatal(err)
			}
			var v int
			if err := st.QueryRowContext(ctx, 5).Scan(&v); err != nil || v != 5 {
				t.Fatalf("prepared query: %d, %v", v, err)
			}
			st.Close()
			// Arguments without interpolateParams: go-sql-driver declines the text, and
			// database/sql prepares it and runs that; the declined call is no statement.
			if _, err := conn.ExecContext(ctx, "/* a1 */ DELETE FROM t WHERE id = ?", 3); err != nil {
				t.Fatal(err)
			}
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "/* t1 */ UPDATE t SET a = 2"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			tx, err = conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if err := held.Rollback(); err != nil {
				t.Fatal(err)
			}

			got := obs.take(t)
			wants := []want{
				{op: OpBegin},
				{op: OpExec, text: "/* held */ UPDATE t SET a = 1", verb: "UPDATE"},
				{op: OpExec, text: "/* e1 */ INSERT INTO t VALUES (1)", verb: "INSERT"},
				{op: OpQuery, text: "/* q1 */ SELECT 7", verb: "SELECT"},
				{op: OpExec, text: "/* e2 */ SELECT broken FROM t", verb: "SELECT", errs: true},
				{op: OpPrepare, text: "/* p1 */ SELECT ?", verb: "SELECT"},
				{op: OpQuery, text: "/* p1 */ SELECT ?", verb: "SELECT"},
				{op: OpPrepare, text: "/* a1 */ DELETE FROM t WHERE id = ?", verb: "DELETE"},
				{op: OpExec, text: "/* a1 */ DELETE FROM t WHERE id = ?", verb: "DELETE"},
				{op: OpBegin},
				{op: OpExec, text: "/* t1 */ UPDATE t SET a = 2", verb: "UPDATE"},
				{op: OpCommit},
				{op: OpBegin},
				{op: OpRollback},
				{op: OpRollback},
			}
			if len(got) != len(wants) {
				for _, o := range got {
					t.Logf("%s %q on %s: %v", o.end.Op, o.end.Text, o.end.Addr, o.err)
				}
				t.Fatalf("observed %d statements, want %d", len(got), len(wants))
			}
			// The node of each statement is the server that received its text; a transaction's
			// begin, commit and rollback are on the node of its statements. Statement mode
			// balances the statements of the held *sql.Conn one by one, outside its
			// transactions, as it balances pool statements.
			received := func(text string) string {
				t.Helper()
				at := ""
				for i, l := range logs {
					for _, q := range l.all() {
						if q == text || strings.HasPrefix(text, "/* p1 */") && q == "/* p1 */ SELECT 5" ||
							strings.HasPrefix(text, "/* a1 */") && q == "/* a1 */ DELETE FROM t WHERE id = 3" {
							if at != "" && at != srvs[i].Addr() {
								t.Fatalf("%q reached both servers", text)
							}
							at = srvs[i].Addr()
						}
					}
				}
				return at
			}
			heldAt, connAt := received("/* held */ UPDATE t SET a = 1"), received("/* e1 */ INSERT INTO t VALUES (1)")
			if heldAt == "" || connAt == "" || heldAt == connAt {
				t.Fatalf("the held transaction ran on %q and the connection's statements on %q: want the two servers", heldAt, connAt)
			}
			for i, w := range wants {
				o := got[i]
				if o.end.Op != w.op || o.end.Text != w.text || o.end.Verb != w.verb || o.start.Text != w.text || o.start.Op != w.op {
					t.Errorf("statement %d: start %s %q, end %s %q verb %q; want %s %q verb %q", i, o.start.Op, o.start.Text, o.end.Op, o.end.Text, o.end.Verb, w.op, w.text, w.verb)
				}
				if errors.Is(o.err, driver.ErrSkip) {
					t.Errorf("statement %d (%s %q) was reported though go-sql-driver declined it", i, w.op, w.text)
				}
				if (o.err != nil) != w.errs {
					t.Errorf("statement %d (%s %q) ended with %v, want an error %v", i, w.op, w.text, o.err, w.errs)
				}
				if o.took <= 0 {
					t.Errorf("statement %d (%s %q) took %v", i, w.op, w.text, o.took)
				}
				node := connAt
				switch {
				case w.text != "":
					node = received(w.text)
				case i < 2 || i == len(wants)-1: // the held transaction's begin and rollback
					node = heldAt
				case i <= 11: // the first transaction's begin and commit: where its statement ran
					node = received("/* t1 */ UPDATE t SET a = 2")
				case mode == "statement": // the empty transaction: statement mode balances its begin as any statement
					node = got[12].end.Addr
					if node != srvs[0].Addr() && node != srvs[1].Addr() {
						t.Errorf("the empty transaction began on %q, none of the servers", node)
					}
				}
				if o.end.Addr != node {
					t.Errorf("statement %d (%s %q) reported node %q, ran on %q", i, w.op, w.text, o.end.Addr, node)
				}
				host, port := splitAddr(node)
				if o.end.Host != host || o.end.Port != port || port == 0 {
					t.Errorf("statement %d: host %q port %d, want %q %d", i, o.end.Host, o.end.Port, host, port)
				}
				wantRole := nodes.RolePrimary
				if node == srvs[1].Addr() {
					wantRole = nodes.RoleReplica
				}
				if o.end.Role != wantRole {
					t.Errorf("statement %d on %s: role %v, want %v", i, node, o.end.Role, wantRole)
				}
				// Connection mode knows the node at the start; statement mode picks it after.
				if wantStart := map[bool]string{true: o.end.Addr, false: ""}[mode == "connection" || w.op == OpCommit || w.op == OpRollback]; o.start.Addr != wantStart {
					t.Errorf("statement %d (%s %q): started with node %q, want %q", i, w.op, w.text, o.start.Addr, wantStart)
				}
			}
		})
	}
}

// TestStatementObserverRetriedRead: a read lbd runs again on another node after its node
// failed it is one statement, reported once, with no error and the node that answered.
func TestStatementObserverRetriedRead(t *testing.T) {
	for _, mode := range []string{"connection", "statement"} {
		t.Run(mode, func(t *testing.T) {
			obs := &statementLog{}
			f := newRetryFleet(t, mode, WithRetryReads(true), WithStatementObserver(obs))
			var v string
			if err := f.db.QueryRow(pointRead).Scan(&v); err != nil || v != "1" {
				t.Fatalf("read: %q, %v; want 1 after one run again", v, err)
			}
			if f.logs[0].count(pointRead) != 1 || f.runs(pointRead) != 2 {
				t.Fatalf("the read reached the first server %d times and the fleet %d, want 1 and 2", f.logs[0].count(pointRead), f.runs(pointRead))
			}
			answered := ""
			for i, l := range f.logs[1:] {
				if l.count(pointRead) == 1 {
					answered = f.srvs[i+1].Addr()
				}
			}
			got := obs.take(t)
			if len(got) != 1 {
				t.Fatalf("observed %d statements, want the one read", len(got))
			}
			if o := got[0]; o.end.Op != OpQuery || o.end.Text != pointRead || o.err != nil || o.end.Addr != answered {
				t.Fatalf("observed %s %q on %s ending with %v; want the query on %s (which answered it) with no error", o.end.Op, o.end.Text, o.end.Addr, o.err, answered)
			}
		})
	}
}

// TestStatementObserverRowsError: an error met reading a query's rows is the query's: its
// end reports it.
func TestStatementObserverRowsError(t *testing.T) {
	srv := mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
		return &mysqlfake.Result{Columns: []string{"v"}, Rows: [][]string{{"1"}, {"2"}}}
	}})
	srv.AddFault(mysqlfake.Fault{Name: "rows/reset", Phase: mysqlfake.PhaseRows, Bytes: mysqlfake.Half, After: mysqlfake.Reset,
		Match: func(c mysqlfake.Command) bool { return strings.Contains(c.Text, "FROM t") }})
	obs := &statementLog{}
	db, _ := openFakeDB(t, []*mysqlfake.Server{srv}, "", append(quiet(), WithStatementObserver(obs))...)
	rows, err := db.Query("SELECT v FROM t")
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
	}
	if err == nil {
		t.Fatal("the query read its rows; the server reset the connection under them")
	}
	got := obs.take(t)
	if len(got) != 1 || got[0].end.Op != OpQuery || got[0].err == nil || got[0].end.Addr != srv.Addr() {
		for _, o := range got {
			t.Logf("%s %q on %s: %v", o.end.Op, o.end.Text, o.end.Addr, o.err)
		}
		t.Fatalf("observed %d statements; want the query on %s, ending with the rows' error", len(got), srv.Addr())
	}
}

func TestWithStatementObserverNil(t *testing.T) {
	_, err := NewConnector("u:p@lb(127.0.0.1:1)/db", WithStatementObserver(nil))
	if err == nil || !strings.Contains(err.Error(), "WithStatementObserver") {
		t.Fatalf("NewConnector with a nil observer: %v; want an error naming WithStatementObserver", err)
	}
}

func TestStatementOpString(t *testing.T) {
	for op, want := range map[StatementOp]string{OpExec: "exec", OpQuery: "query", OpPrepare: "prepare",
		OpBegin: "begin", OpCommit: "commit", OpRollback: "rollback", 99: "unknown"} {
		if got := op.String(); got != want {
			t.Errorf("StatementOp(%d).String() = %q, want %q", op, got, want)
		}
	}
}

// TestStatementObserverRefusedRead: under the read/write split, a read a replica refused as not
// the primary and the primary then ran is one statement, reported with the primary, its role,
// and no error.
func TestStatementObserverRefusedRead(t *testing.T) {
	const read = "SELECT v FROM t WHERE id = 1"
	primary := &scripted{answers: map[string]func(string) *mysqlfake.Result{read: oneRow("7")}}
	replica := &scripted{answers: map[string]func(string) *mysqlfake.Result{read: refusal(1290)}}
	srvs := startScripted(t, replica, primary) // the replica is listed first: the first read goes there
	obs := &statementLog{}
	db, _ := openRoles(t, srvs, []string{"replica", "primary"}, "balance=statement&readWriteSplit=true", append(quiet(), WithStatementObserver(obs))...)
	var v int
	if err := db.QueryRowContext(ctx5s(t), read).Scan(&v); err != nil || v != 7 {
		t.Fatalf("read: %d, %v", v, err)
	}
	if replica.count(read) != 1 || primary.count(read) != 1 {
		t.Fatalf("the replica was asked %d times and the primary %d, want once each", replica.count(read), primary.count(read))
	}
	got := obs.take(t)
	if len(got) != 1 {
		t.Fatalf("observed %d statements, want the one read", len(got))
	}
	if o := got[0]; o.end.Addr != srvs[1].Addr() || o.end.Role != nodes.RolePrimary || o.err != nil {
		t.Fatalf("observed the read on %s (%v) ending with %v; want it on the primary %s with no error", o.end.Addr, o.end.Role, o.err, srvs[1].Addr())
	}
}
