package statementmode

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/inspect"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// A stored procedure can change anything in the session (user variables, SET SESSION,
// temporary tables, a transaction left open). CALL is not treated as session state, so the
// physical connection it ran on goes back to the shared free list and the next logical
// connection inherits the procedure's session.
func TestStatementModeCallDoesNotLeakSessionState(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	db, _ := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	setup, _ := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...) // the procedure's text names @sf_leak, which would pin
	proc := fmt.Sprintf("sf_proc_%d", rand.Uint32())
	if _, err := setup.Exec("CREATE PROCEDURE " + proc + "() BEGIN SET @sf_leak = 42; END"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { setup.Exec("DROP PROCEDURE IF EXISTS " + proc) })
	ctx := context.Background()
	a, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.ExecContext(ctx, "CALL "+proc+"()"); err != nil {
		t.Fatal(err)
	}
	var one int
	if err := a.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatal(err)
	}
	a.Close()
	var v sql.NullInt64
	if err := b.QueryRowContext(ctx, "SELECT @sf_leak").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v.Valid {
		t.Errorf("another logical connection sees @sf_leak = %d, set by a stored procedure CALLed on a different one; want NULL", v.Int64)
	}
}

// README: a BeginTx transaction keeps its physical connection "until COMMIT or ROLLBACK
// succeeds", and SQL-text transactions are handled that way. For BeginTx, logicalTx clears the
// pin whatever Commit or Rollback returned: when COMMIT fails without ending the transaction,
// the physical connection goes back to the shared free list with the transaction open, and a
// statement of another logical connection, which never began a transaction, runs inside it.
// Its acknowledged autocommit write is invisible to everyone else and is lost when that
// physical connection closes. In connection mode the open transaction stays with the
// connection that began it (the connection subtest passes).
func TestStatementModeFailedCommitDoesNotLeakTheTransaction(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"statement", "connection"} {
		t.Run(mode, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 1)
			db, _ := clusterkit.OpenDB(t, cl, "balance="+mode, clusterkit.Quiet()...)
			tbl := faultTable(t, cl, db)
			ctx := context.Background()
			conn := func() *sql.Conn {
				t.Helper()
				cn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				return cn
			}
			// Two connections, A then X, idle in database/sql's pool.
			a, x := conn(), conn()
			if err := x.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
			x.Close()
			tx, err := a.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			if err := tx.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); err != nil {
				t.Fatal(err)
			}
			cl.Proxy(0).FailNext(1, &mysql.MySQLError{Number: 1180, Message: "Got error 1 during COMMIT"})
			if err := tx.Commit(); err == nil {
				t.Fatal("COMMIT succeeded despite the injected failure")
			}
			a.Close()

			a2 := conn() // A again (most recently returned), held so that X is handed out next
			defer a2.Close()
			x2 := conn() // X, which never began a transaction
			defer x2.Close()
			if _, err := x2.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (2)"); err != nil {
				t.Fatal(err)
			}
			y := conn() // a third connection checks what is committed
			defer y.Close()
			var n int
			if err := y.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl+" WHERE id = 2").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("an autocommit INSERT that succeeded on a connection with no transaction is not visible "+
					"to others (count %d): it ran inside the transaction whose COMMIT failed on another connection", n)
			}
		})
	}
}

// freshRead runs query on a *sql.Conn whose logical connection carries no session state of
// its own, and reports false when the logical connection was pinned (nothing can be said).
func freshRead(ctx context.Context, db *sql.DB, query string, dest ...any) (bool, error) {
	cn, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer cn.Close()
	fresh := false
	err = cn.Raw(func(dc any) error {
		pinned, ok := inspect.Pinned(dc)
		if !ok {
			return fmt.Errorf("the connection is %T, not a logical connection", dc)
		}
		fresh = !pinned
		return nil
	})
	if err != nil {
		return false, err
	}
	if !fresh {
		return false, nil
	}
	return true, cn.QueryRowContext(ctx, query).Scan(dest...)
}

// Session state set on one logical connection, in every way a statement can reach the server
// (text, parameters through database/sql's prepare fallback, a prepared statement, SET
// SESSION), must never be seen by a logical connection that set nothing, while database/sql
// keeps closing logical connections (SetMaxIdleConns, ConnMaxLifetime).
func TestStatementModeSessionStateNeverReachesAnotherLogicalConnection(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	db.SetMaxOpenConns(12)
	db.SetMaxIdleConns(3)
	db.SetConnMaxLifetime(20 * time.Millisecond)
	ctx := context.Background()
	setStmt, err := db.Prepare("SET @sf_s = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer setStmt.Close()
	var leaks, checked atomic.Int64
	var firstLeak atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() { // setters
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch (i + j) % 5 {
				case 0:
					_, err = db.ExecContext(ctx, "SET @sf_s = 1")
				case 1:
					_, err = db.ExecContext(ctx, "SET @sf_s = ?", 2)
				case 2:
					_, err = setStmt.ExecContext(ctx, 3)
				case 3:
					_, err = db.ExecContext(ctx, "SET SESSION sql_mode = 'ANSI_QUOTES'")
				case 4:
					_, err = db.ExecContext(ctx, "SELECT 4 INTO @sf_s")
				}
				if err != nil {
					t.Errorf("setter: %v", err)
					return
				}
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() { // readers on logical connections that set nothing
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var v sql.NullInt64
				var mode string
				ok, err := freshRead(ctx, db, "SELECT @sf_s, @@sql_mode", &v, &mode)
				if err != nil {
					t.Errorf("reader: %v", err)
					return
				}
				if !ok {
					continue
				}
				checked.Add(1)
				if v.Valid || strings.Contains(mode, "ANSI_QUOTES") {
					leaks.Add(1)
					firstLeak.CompareAndSwap(nil, fmt.Sprintf("@sf_s=%v sql_mode=%s", v, mode))
				}
			}
		}()
	}
	// Enough clean reads while ConnMaxLifetime churns the physical connections under the
	// setters; LBD_TEST_SOAK keeps the mix going longer.
	dialed := func() (n uint64) {
		for _, ns := range c.Stats().Nodes {
			n += ns.Dials
		}
		return n
	}
	testkit.WaitFor(t, 30*time.Second, "100 reads on unpinned logical connections over 100 dialed physical ones", func() bool {
		return checked.Load() >= 100 && dialed() >= 100
	})
	testkit.SoakWait(t)
	close(stop)
	wg.Wait()
	if n := leaks.Load(); n > 0 {
		t.Errorf("%d of %d reads on logical connections that set nothing saw another's session state, first: %v", n, checked.Load(), firstLeak.Load())
	}
	t.Logf("%d clean reads, %d physical connections dialed", checked.Load(), dialed())
}
