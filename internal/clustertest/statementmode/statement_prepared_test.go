package statementmode

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/inspect"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// serverStatements returns how many prepared statements lbd keeps open on the server over
// every physical connection (only safe while no other goroutine uses the Connector).
func serverStatements(c *lbd.Connector) int { return inspect.ServerStatements(c) }

// Parameterized statements without interpolateParams are prepared, executed and closed by
// database/sql (driver.ErrSkip); so is every *sql.Stmt an application prepares and closes. In
// statement mode the physical copy stays in the physical connection's cache, and the cache is
// swept only when the physical connection is claimed again: a *sql.Conn or *sql.Tx that runs
// many such statements keeps every one of them open on the server (MySQL refuses new ones
// beyond max_prepared_stmt_count, 16382 by default for the whole server, so one long batch
// transaction breaks prepares for every client of that server).
func TestStatementModeClosedStatementsAreClosedOnTheServerWhileTheConnectionIsHeld(t *testing.T) {
	const n = 50
	for _, kind := range []string{"sql.Conn", "sql.Tx"} {
		t.Run(kind, func(t *testing.T) {
			cl := lbdtest.NewCluster(t, 1)
			db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
			tbl := faultTable(t, cl, db)
			ctx := context.Background()
			var q interface {
				ExecContext(context.Context, string, ...any) (sql.Result, error)
				QueryRowContext(context.Context, string, ...any) *sql.Row
				PrepareContext(context.Context, string) (*sql.Stmt, error)
			}
			var done func() error
			if kind == "sql.Conn" {
				cn, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				q, done = cn, cn.Close
			} else {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				q, done = tx, tx.Commit
			}
			for i := range n {
				if _, err := q.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (?)", i); err != nil {
					t.Fatal(err)
				}
				var got int
				if err := q.QueryRowContext(ctx, "SELECT id FROM "+tbl+" WHERE id = ?", i).Scan(&got); err != nil {
					t.Fatal(err)
				}
				st, err := q.PrepareContext(ctx, fmt.Sprintf("SELECT id + %d FROM %s WHERE id = ?", i, tbl))
				if err != nil {
					t.Fatal(err)
				}
				if err := st.QueryRowContext(ctx, i).Scan(&got); err != nil {
					t.Fatal(err)
				}
				st.Close()
			}
			open := serverStatements(c)
			if err := done(); err != nil {
				t.Fatal(err)
			}
			if open > 3 {
				t.Errorf("after %d statements on one %s, each closed by database/sql or the application, "+
					"%d prepared statements are still open on the server; want at most 3", 3*n, kind, open)
			}
		})
	}
}

// openPreparedQueries returns how many query texts the Connector's prepared set holds open.
func openPreparedQueries(c *lbd.Connector) int { return len(inspect.PreparedQueries(c)) }

// A long-lived *sql.Stmt keeps working, without an error reaching the application, when every
// physical connection it was prepared on is gone (all proxies restarted): it is prepared again
// on the new ones. Its NumInput is the query's, a prepare error leaks no reference, and once
// every statement is closed no query stays open.
func TestStatementModePreparedStatementAcrossProxyRestarts(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	tbl := faultTable(t, cl, db)
	for i := range 10 {
		if _, err := db.Exec(fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", tbl, i)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := db.Prepare("SELECT COUNT(*) FROM " + tbl + " WHERE id >= ? AND id < ?")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run := func(when string) {
		t.Helper()
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					lo := (g + i) % 10
					var n int
					if err := st.QueryRow(lo, lo+3).Scan(&n); err != nil {
						t.Errorf("%s: %v", when, err)
						return
					}
					if want := min(lo+3, 10) - lo; n != want {
						t.Errorf("%s: count %d for [%d,%d), want %d", when, n, lo, lo+3, want)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run("before the restart")
	if err := st.QueryRow(1).Scan(new(int)); err == nil || !strings.Contains(err.Error(), "expected 2 arguments") {
		t.Errorf("one argument for two placeholders: %v, want database/sql's argument count error", err)
	}
	for _, px := range cl.Proxies() {
		px.Stop()
	}
	for _, px := range cl.Proxies() {
		if err := px.Start(); err != nil {
			t.Fatal(err)
		}
	}
	run("after every proxy restarted")

	before := openPreparedQueries(c)
	for range 5 {
		if _, err := db.Prepare("SELEC nonsense FROM " + tbl); err == nil {
			t.Fatal("a syntax error prepared")
		}
		if _, err := db.Exec("SELEC ? FROM "+tbl, 1); err == nil {
			t.Fatal("a syntax error ran")
		}
	}
	if after := openPreparedQueries(c); after != before {
		t.Errorf("prepare errors left %d query texts open (was %d)", after, before)
	}
	st.Close()
	if n := openPreparedQueries(c); n != 0 {
		t.Errorf("%d query texts open once every statement is closed", n)
	}
}

// Closing a *sql.Stmt while another goroutine has the logical connection it was prepared on in
// use, the same text prepared by many logical connections at once, and re-preparing: no
// execution fails and the prepared set drains.
func TestStatementModePreparedStatementChurn(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	tbl := faultTable(t, cl, db)
	const q = "SELECT COUNT(*) FROM %s WHERE id > ?"
	var wg sync.WaitGroup
	var runs atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range 30 {
				switch (g + i) % 3 {
				case 0: // db-level statement, prepared and closed each time
					st, err := db.Prepare(fmt.Sprintf(q, tbl))
					if err != nil {
						t.Error(err)
						return
					}
					if err := st.QueryRow(0).Scan(new(int)); err != nil {
						t.Error(err)
					}
					st.Close()
				case 1: // statement of a *sql.Conn, closed while a db-level statement of the same text lives on
					cn, err := db.Conn(ctx)
					if err != nil {
						t.Error(err)
						return
					}
					st, err := cn.PrepareContext(ctx, fmt.Sprintf(q, tbl))
					if err != nil {
						t.Error(err)
						cn.Close()
						return
					}
					// Closing a statement while its own rows are open breaks go-sql-driver's
					// protocol state in either mode, so the rows are read first.
					rows, err := st.QueryContext(ctx, 0)
					if err != nil {
						t.Error(err)
					} else {
						for rows.Next() {
						}
						if err := rows.Err(); err != nil {
							t.Error(err)
						}
						rows.Close()
					}
					st.Close()
					cn.Close()
				case 2: // inside a transaction
					tx, err := db.BeginTx(ctx, nil)
					if err != nil {
						t.Error(err)
						return
					}
					st, err := tx.PrepareContext(ctx, fmt.Sprintf(q, tbl))
					if err == nil {
						err = st.QueryRowContext(ctx, 0).Scan(new(int))
						st.Close()
					}
					if err != nil {
						t.Error(err)
					}
					if err := tx.Commit(); err != nil {
						t.Error(err)
					}
				}
				runs.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := openPreparedQueries(c); n != 0 {
		t.Errorf("%d query texts still open after %d runs, every statement closed", n, runs.Load())
	}
	checkIdleInvariants(t, db, c, cl, false)
}

// database/sql does not always close a connection's statements before the connection: when
// *sql.Stmt.Close finds the connection checked out, it defers the driver statement's Close to
// the connection's return (driverConn.onPut) and drops it from the connection's open
// statements; if database/sql then discards that connection at checkout (ConnMaxLifetime
// expired, or ResetSession said driver.ErrBadConn) the deferred Close never runs. In
// connection mode that costs nothing (closing the connection frees its statements). In
// statement mode logicalConn.Close does not release its logical statements, so the query keeps
// a reference for ever: it never dies, and every physical connection that prepared it keeps
// its server-side copy for its whole life (per distinct text: unbounded for generated SQL).
func TestStatementModeClosingALogicalConnectionReleasesItsStatements(t *testing.T) {
	t.Run("driver", func(t *testing.T) { // deterministic: the connection closes, its statement does not
		cl := lbdtest.NewCluster(t, 2)
		c, err := lbd.NewConnector(cl.DSN("balance=statement"), append(clusterkit.Quiet(), lbd.WithLogger(clusterkit.DiscardLogger()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		other, err := c.Connect(ctx) // another logical connection keeps the physical ones open
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		dc, err := c.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if pinned, ok := inspect.Pinned(dc); !ok || pinned {
			t.Fatalf("Connect returned %T (pinned %v), want an unpinned logical connection", dc, pinned)
		}
		if _, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, "SELECT 1 + ?"); err != nil {
			t.Fatal(err)
		}
		dc.(driver.Validator).IsValid() // returned to the pool, then discarded by database/sql
		dc.Close()
		if n := openPreparedQueries(c); n != 0 {
			t.Errorf("%d query texts still referenced after the only logical connection that prepared them closed; "+
				"the %d server-side copies on open physical connections will never be closed", n, serverStatements(c))
		}
	})
	t.Run("database/sql", func(t *testing.T) { // the same through database/sql's own race
		cl := lbdtest.NewCluster(t, 2)
		db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
		db.SetConnMaxLifetime(time.Millisecond)
		var wg, side sync.WaitGroup
		var cycles atomic.Int64
		stop := make(chan struct{})
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					st, err := db.Prepare("SELECT 1 + ?")
					if err != nil {
						continue
					}
					cycles.Add(1)
					var runs sync.WaitGroup
					for range 3 {
						runs.Add(1)
						go func() { defer runs.Done(); st.QueryRow(1).Scan(new(int)) }()
					}
					side.Add(1)
					go func() { defer side.Done(); db.Exec("SELECT 1") }() // checks connections out as st closes
					runs.Wait()
					st.Close()
				}
			}()
		}
		// The race needs many statements closed while database/sql discards their connections;
		// LBD_TEST_SOAK keeps it going longer.
		testkit.WaitFor(t, 30*time.Second, "500 prepared statements used and closed", func() bool { return cycles.Load() >= 500 })
		testkit.SoakWait(t)
		close(stop)
		wg.Wait()
		side.Wait()
		t.Logf("%d prepared statements used and closed", cycles.Load())
		db.SetMaxIdleConns(0) // every logical connection closes
		testkit.WaitFor(t, 5*time.Second, "every logical connection to close", func() bool { return c.Stats().Logical == 0 })
		for q, refs := range inspect.PreparedQueries(c) {
			t.Errorf("every *sql.Stmt closed and no logical connection open, yet %q keeps %d references", q, refs)
		}
	})
}
