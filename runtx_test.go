package lbd

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// RunTx against scripted servers over the real protocol: what each answer lets it run again,
// and what it never does.

// serverErr answers with a server error.
func serverErr(number uint16, state, msg string) func(string) *mysqlfake.Result {
	return func(string) *mysqlfake.Result {
		return &mysqlfake.Result{Err: &mysqlfake.Error{Number: number, State: state, Message: msg}}
	}
}

var deadlock = serverErr(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction")

// failFirst answers the first n calls with fail and the rest as the server would.
func failFirst(n int64, fail func(string) *mysqlfake.Result) func(string) *mysqlfake.Result {
	var calls atomic.Int64
	return func(q string) *mysqlfake.Result {
		if calls.Add(1) <= n {
			return fail(q)
		}
		return mysqlfake.DefaultAnswer(q)
	}
}

// txServer starts one scripted server answering the text "INSERT INTO t" with insert, and opens
// a *sql.DB over it.
func txServer(t *testing.T, insert func(string) *mysqlfake.Result) (*scripted, *mysqlfake.Server, *sql.DB) {
	t.Helper()
	s := &scripted{answers: map[string]func(string) *mysqlfake.Result{"INSERT INTO t": insert}}
	srvs := startScripted(t, s)
	db, _ := openFakeDB(t, srvs, "", quiet()...)
	return s, srvs[0], db
}

// insertOnce is a transaction's body: one insert, counted.
func insertOnce(runs *int) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		*runs++
		_, err := tx.Exec("INSERT INTO t VALUES (1)")
		return err
	}
}

// quick reruns at once, so the tests wait for nothing.
var quick = TxRetryPolicy{InitialBackoff: -1}

// A deadlock's victim is rolled back whole by the server: RunTx runs the body again in a new
// transaction, and it commits once.
func TestRunTxRerunsADeadlockVictim(t *testing.T) {
	s, _, db := txServer(t, failFirst(1, deadlock))
	runs := 0
	var reruns []string
	p := quick
	p.OnRerun = func(attempt int, err error) { reruns = append(reruns, fmt.Sprintf("%d %v", attempt, err)) }
	if err := p.RunTx(ctx5s(t), db, nil, insertOnce(&runs)); err != nil {
		t.Fatalf("RunTx: %v", err)
	}
	if runs != 2 || s.count("COMMIT") != 1 || s.count("ROLLBACK") != 1 {
		t.Fatalf("body ran %d times, %d COMMIT, %d ROLLBACK; want 2, 1, 1 (server saw %q)", runs, s.count("COMMIT"), s.count("ROLLBACK"), s.all())
	}
	if len(reruns) != 1 || !strings.HasPrefix(reruns[0], "1 ") || !strings.Contains(reruns[0], "1213") {
		t.Fatalf("OnRerun saw %q; want one call for attempt 1 with the deadlock", reruns)
	}
}

// An error that does not say the whole transaction is gone is returned after one run, with
// the transaction rolled back and the error reachable by errors.Is and errors.As. 1205 is
// among them: by default the server rolls back only the statement that waited.
func TestRunTxReturnsAnErrorThatAllowsNoRerun(t *testing.T) {
	own := errors.New("the body's own error")
	for _, tc := range []struct {
		name   string
		insert func(string) *mysqlfake.Result
		body   func(tx *sql.Tx) error
		number uint16 // the server error errors.As must find, 0 for none
	}{
		{"duplicate key", serverErr(1062, "23000", "Duplicate entry '1' for key 'PRIMARY'"), nil, 1062},
		{"lock wait timeout", serverErr(1205, "HY000", "Lock wait timeout exceeded; try restarting transaction"), nil, 1205},
		{"the body's own error", mysqlfake.DefaultAnswer, func(tx *sql.Tx) error {
			if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
				return err
			}
			return fmt.Errorf("checking the order: %w", own)
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, db := txServer(t, tc.insert)
			runs := 0
			body := insertOnce(&runs)
			if tc.body != nil {
				body = func(tx *sql.Tx) error { runs++; return tc.body(tx) }
			}
			err := quick.RunTx(ctx5s(t), db, nil, body)
			if runs != 1 || s.count("COMMIT") != 0 || s.count("ROLLBACK") != 1 {
				t.Fatalf("body ran %d times, %d COMMIT, %d ROLLBACK; want 1, 0, 1", runs, s.count("COMMIT"), s.count("ROLLBACK"))
			}
			var txErr *TxError
			if !errors.As(err, &txErr) || txErr.Attempts != 1 || txErr.Rerunnable || !strings.Contains(err.Error(), "attempt 1 of 3") {
				t.Fatalf("error %v; want a *TxError of attempt 1 of 3", err)
			}
			var me *mysql.MySQLError
			switch {
			case tc.number != 0 && (!errors.As(err, &me) || me.Number != tc.number):
				t.Fatalf("error %v; want the server's %d through errors.As", err, tc.number)
			case tc.number == 0 && !errors.Is(err, own):
				t.Fatalf("error %v; want the body's own error through errors.Is", err)
			}
		})
	}
}

// When every attempt fails with an error that allows a rerun, RunTx stops at MaxAttempts and
// says so, with the last cause inside.
func TestRunTxStopsWhenTheAttemptsRunOut(t *testing.T) {
	s, _, db := txServer(t, deadlock)
	for _, max := range []int{0, 5} { // 0: the default, DefaultTxMaxAttempts
		want := max
		if want == 0 {
			want = DefaultTxMaxAttempts
		}
		before := s.count("ROLLBACK")
		runs := 0
		p := quick
		p.MaxAttempts = max
		err := p.RunTx(ctx5s(t), db, nil, insertOnce(&runs))
		if runs != want || s.count("COMMIT") != 0 || s.count("ROLLBACK")-before != want {
			t.Fatalf("MaxAttempts %d: body ran %d times, %d COMMIT, %d ROLLBACK; want %d, 0, %d", max, runs, s.count("COMMIT"), s.count("ROLLBACK")-before, want, want)
		}
		var txErr *TxError
		var me *mysql.MySQLError
		if !errors.As(err, &txErr) || txErr.Attempts != want || !txErr.Rerunnable || !errors.As(err, &me) || me.Number != 1213 {
			t.Fatalf("MaxAttempts %d: error %v; want a *TxError of %d attempts, rerunnable, wrapping the deadlock", max, err, want)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("failed %d times of %d allowed", want, want)) {
			t.Fatalf("MaxAttempts %d: error %q does not say the attempts ran out", max, err)
		}
	}
}

// A context that ends during the pause before a rerun stops RunTx at once, with the context's
// error; the body does not run again.
func TestRunTxStopsWhenTheContextEndsBetweenAttempts(t *testing.T) {
	s, _, db := txServer(t, deadlock)
	ctx, cancel := context.WithCancel(ctx5s(t))
	defer cancel()
	ranOnce := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ranOnce
		cancel()
	}()
	runs := 0
	start := time.Now()
	p := TxRetryPolicy{InitialBackoff: time.Minute, MaxBackoff: time.Minute}
	err := p.RunTx(ctx, db, nil, func(tx *sql.Tx) error {
		runs++
		_, err := tx.Exec("INSERT INTO t VALUES (1)")
		if runs == 1 {
			close(ranOnce)
		}
		return err
	})
	<-done
	if runs != 1 || s.count("COMMIT") != 0 {
		t.Fatalf("body ran %d times, %d COMMIT; want 1, 0", runs, s.count("COMMIT"))
	}
	var txErr *TxError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &txErr) || txErr.Attempts != 1 || !txErr.Rerunnable {
		t.Fatalf("error %v; want context.Canceled in a *TxError of attempt 1, rerunnable", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("RunTx took %v: the minute's pause did not end with the context", took)
	}
}

// A connection that breaks once COMMIT is sent leaves the outcome unknown: the server may have
// committed. RunTx says so and does not run the body again.
func TestRunTxNeverRerunsACommitWhoseOutcomeIsUnknown(t *testing.T) {
	s, srv, db := txServer(t, mysqlfake.DefaultAnswer)
	srv.AddFault(mysqlfake.Fault{Name: "commit/close", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Close,
		Match: func(c mysqlfake.Command) bool { return c.Op == mysqlfake.ComQuery && c.Text == "COMMIT" }})
	runs := 0
	err := quick.RunTx(ctx5s(t), db, nil, insertOnce(&runs))
	if runs != 1 || s.count("COMMIT") != 1 {
		t.Fatalf("body ran %d times, COMMIT sent %d times; want 1, 1", runs, s.count("COMMIT"))
	}
	var txErr *TxError
	if !errors.Is(err, ErrCommitUnknown) || !errors.As(err, &txErr) || txErr.Attempts != 1 || txErr.Rerunnable {
		t.Fatalf("error %v; want ErrCommitUnknown in a *TxError of attempt 1", err)
	}
	if !strings.Contains(err.Error(), "may or may not have committed") {
		t.Fatalf("error %q does not say the outcome is unknown", err)
	}
}

// A transaction on a primary that a switchover demotes midway is told ErrPrimaryChanged; RunTx
// runs it again, on the new primary, where it commits. Nothing of it is committed on the old
// one, in either mode.
func TestRunTxRerunsOnTheNewPrimary(t *testing.T) {
	for _, params := range []string{"target=primary&roleCheck=mysql", "balance=statement&readWriteSplit=true&roleCheck=mysql"} {
		t.Run(params, func(t *testing.T) {
			a, db, switchover := demotablePair(t, params)
			runs := 0
			var causes []error
			p := quick
			p.OnRerun = func(_ int, err error) { causes = append(causes, err) }
			err := p.RunTx(ctx5s(t), db, nil, func(tx *sql.Tx) error {
				runs++
				if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
					return err
				}
				if runs == 1 {
					switchover(1)
				}
				_, err := tx.Exec("INSERT INTO t VALUES (2)")
				return err
			})
			if err != nil {
				t.Fatalf("RunTx: %v", err)
			}
			if runs != 2 || len(causes) != 1 || !errors.Is(causes[0], ErrPrimaryChanged) {
				t.Fatalf("body ran %d times, reruns after %v; want 2, one after ErrPrimaryChanged", runs, causes)
			}
			if a.count("INSERT INTO t VALUES (2)") != 0 || a.count("COMMIT") != 0 {
				t.Fatalf("the old primary saw %q; want no second insert and no COMMIT", a.all())
			}
		})
	}
}

// A panic in the body rolls the transaction back and goes on up; nothing commits, nothing runs
// again.
func TestRunTxRollsBackWhenTheBodyPanics(t *testing.T) {
	s, _, db := txServer(t, mysqlfake.DefaultAnswer)
	runs := 0
	func() {
		defer func() {
			if r := recover(); r != "the body's panic" {
				t.Fatalf("recovered %v; want the body's panic", r)
			}
		}()
		quick.RunTx(ctx5s(t), db, nil, func(tx *sql.Tx) error {
			runs++
			if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
				return err
			}
			panic("the body's panic")
		})
	}()
	if runs != 1 || s.count("COMMIT") != 0 || s.count("ROLLBACK") != 1 {
		t.Fatalf("body ran %d times, %d COMMIT, %d ROLLBACK; want 1, 0, 1", runs, s.count("COMMIT"), s.count("ROLLBACK"))
	}
}

// The pauses between attempts: the defaults, a pause never longer than MaxBackoff, none when
// InitialBackoff is negative.
func TestRunTxPolicyDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, want TxRetryPolicy
	}{
		{TxRetryPolicy{}, TxRetryPolicy{MaxAttempts: 3, InitialBackoff: 20 * time.Millisecond, MaxBackoff: time.Second}},
		{TxRetryPolicy{MaxAttempts: -1, InitialBackoff: -1, MaxBackoff: -1}, TxRetryPolicy{MaxAttempts: 3, InitialBackoff: 0, MaxBackoff: time.Second}},
		{TxRetryPolicy{MaxAttempts: 1, InitialBackoff: time.Minute, MaxBackoff: time.Second}, TxRetryPolicy{MaxAttempts: 1, InitialBackoff: time.Second, MaxBackoff: time.Second}},
	} {
		if got := tc.in.withDefaults(); got.MaxAttempts != tc.want.MaxAttempts || got.InitialBackoff != tc.want.InitialBackoff || got.MaxBackoff != tc.want.MaxBackoff {
			t.Errorf("%+v with defaults = %+v; want %+v", tc.in, got, tc.want)
		}
	}
}

// A transfer that runs again when the server picks it as a deadlock's victim or a switchover
// catches it midway. Everything it does goes through tx, so a second run repeats nothing.
func ExampleRunTx() {
	db, err := Open("app:secret@lb(db1:3306,db2:3306)/bank?roleCheck=mysql&target=primary")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = RunTx(ctx, db, nil, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance - ? WHERE id = ?", 100, 1); err != nil {
			return err // returned as is: RunTx decides from it whether to run again
		}
		_, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = balance + ? WHERE id = ?", 100, 2)
		return err
	})
	switch {
	case errors.Is(err, ErrCommitUnknown):
		log.Print("the transfer may have been made; look before making it again: ", err)
	case err != nil:
		log.Print(err) // a *TxError: how many attempts ran, and the last one's error
	}
}

// Five attempts, with pauses from 50 ms, counted by the program's own metrics.
func ExampleTxRetryPolicy_RunTx() {
	db, err := Open("app:secret@lb(db1:3306,db2:3306)/bank?roleCheck=mysql&target=primary")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	var reruns atomic.Int64
	policy := TxRetryPolicy{
		MaxAttempts:    5,
		InitialBackoff: 50 * time.Millisecond,
		OnRerun:        func(attempt int, err error) { reruns.Add(1) },
	}
	err = policy.RunTx(context.Background(), db, &sql.TxOptions{Isolation: sql.LevelSerializable}, func(tx *sql.Tx) error {
		_, err := tx.Exec("INSERT INTO audit (event) VALUES ('login')")
		return err
	})
	if err != nil {
		log.Print(err)
	}
}
