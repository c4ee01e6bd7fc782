package statementmode

import (
	"github.com/lbd-go/lbd"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// These tests run database/sql code the way applications and ORMs write it, in both balance
// modes, and require statement mode to give the results connection mode gives with the same
// pool settings. Most use a pool of one connection: then connection mode is fully
// deterministic (every statement runs on the one session), and statement mode must keep every
// session-visible effect although its statements move between proxies.

// ormTable creates a fresh table (id BIGINT AUTO_INCREMENT, v INT, name VARCHAR) through a
// connection-mode DB of its own, and drops it at test end straight on the backend, bounded in
// time (a test that left a transaction open must have closed its DB by then).
func ormTable(t *testing.T, cl *lbdtest.Cluster) string {
	t.Helper()
	tbl := fmt.Sprintf("orm_%d", rand.Uint32())
	admin, _ := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	defer admin.Close() // leaves no connection of its own on the proxies
	if _, err := admin.Exec("CREATE TABLE " + tbl + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, v INT NOT NULL DEFAULT 0, name VARCHAR(64) NOT NULL DEFAULT '')"); err != nil {
		t.Fatal(err)
	}
	clusterkit.DropOnBackend(t, cl, tbl)
	return tbl
}

// freshCount counts rows of tbl matching where through a new connection-mode DB: what any
// other client sees as committed.
func freshCount(t *testing.T, cl *lbdtest.Cluster, tbl, where string) int {
	t.Helper()
	other, _ := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := other.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl+" WHERE "+where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// onePool opens a DB in the given balance mode with a pool of exactly one connection.
func onePool(t *testing.T, cl *lbdtest.Cluster, balance, params string) (*sql.DB, *lbd.Connector) {
	t.Helper()
	if params != "" {
		params += "&"
	}
	db, c := clusterkit.OpenDB(t, cl, params+"balance="+balance, clusterkit.Quiet()...)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, c
}

func eachMode(t *testing.T, body func(t *testing.T, balance string)) {
	for _, balance := range []string{"connection", "statement"} {
		t.Run(balance, func(t *testing.T) { body(t, balance) })
	}
}

// A statement that writes leaves its physical connection kept aside so that a next statement
// reading LAST_INSERT_ID() runs there. database/sql calls that are not statements, Ping and
// Prepare, must not lose it: a readiness probe's db.PingContext, or a statement prepared
// lazily, between an INSERT and its LAST_INSERT_ID() still reads the INSERT's id, as in
// connection mode.
func TestStatementModePingOrPrepareDoNotLoseLastInsertID(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	between := map[string]func(ctx context.Context, db *sql.DB, tbl string) error{
		"Ping": func(ctx context.Context, db *sql.DB, _ string) error { return db.PingContext(ctx) },
		"Prepare": func(ctx context.Context, db *sql.DB, tbl string) error {
			st, err := db.PrepareContext(ctx, "SELECT name FROM "+tbl+" WHERE id = ?")
			if err != nil {
				return err
			}
			return st.Close()
		},
	}
	for _, what := range []string{"Ping", "Prepare"} {
		t.Run(what, func(t *testing.T) {
			eachMode(t, func(t *testing.T, balance string) {
				tbl := ormTable(t, cl)
				db, _ := onePool(t, cl, balance, "")
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				var wrong []string
				for i := range 6 {
					res, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (v) VALUES (%d)", tbl, i))
					if err != nil {
						t.Fatal(err)
					}
					id, err := res.LastInsertId()
					if err != nil {
						t.Fatal(err)
					}
					if err := between[what](ctx, db, tbl); err != nil {
						t.Fatal(err)
					}
					var got sql.NullInt64
					if err := db.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&got); err != nil {
						t.Fatal(err)
					}
					if !got.Valid || got.Int64 != id {
						wrong = append(wrong, fmt.Sprintf("insert id %d: LAST_INSERT_ID() = %s", id, nullInt(got)))
					}
				}
				if len(wrong) > 0 {
					t.Errorf("with a %s between INSERT and SELECT LAST_INSERT_ID() on a pool of one, %d of 6 reads were wrong: %s",
						what, len(wrong), strings.Join(wrong, "; "))
				}
			})
		})
	}
}

// Multi-statement texts (multiStatements=true), as migrations and batch jobs send them.
//
// In "BEGIN; INSERT ...; <failing statement>; COMMIT" the server stops at the error and never
// runs COMMIT, so a transaction stays open: the logical connection must keep that physical
// connection, so that the application's ROLLBACK reaches it and no other statement joins it
// (on MariaDB its metadata locks would also hang DDL on the table).
func TestStatementModeMultiStatementTexts(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	t.Run("INSERT then LAST_INSERT_ID in one text", func(t *testing.T) {
		eachMode(t, func(t *testing.T, balance string) {
			tbl := ormTable(t, cl)
			db, _ := onePool(t, cl, balance, "multiStatements=true")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := range 4 {
				rows, err := db.QueryContext(ctx, fmt.Sprintf("INSERT INTO %s (v) VALUES (%d); SELECT LAST_INSERT_ID(), MAX(id) FROM %s", tbl, i, tbl))
				if err != nil {
					t.Fatal(err)
				}
				var last, maxID int64
				for rows.Next() || (rows.NextResultSet() && rows.Next()) {
					if err := rows.Scan(&last, &maxID); err != nil {
						t.Fatal(err)
					}
				}
				if err := errors.Join(rows.Err(), rows.Close()); err != nil {
					t.Fatal(err)
				}
				if last == 0 || last != maxID {
					t.Fatalf("round %d: LAST_INSERT_ID() %d, MAX(id) %d", i, last, maxID)
				}
			}
		})
	})
	t.Run("BEGIN..COMMIT in one text", func(t *testing.T) {
		eachMode(t, func(t *testing.T, balance string) {
			tbl := ormTable(t, cl)
			db, _ := onePool(t, cl, balance, "multiStatements=true")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := range 3 {
				q := fmt.Sprintf("BEGIN; INSERT INTO %s (v) VALUES (%d); INSERT INTO %s (v) VALUES (%d); COMMIT", tbl, 10+i, tbl, 20+i)
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if n := freshCount(t, cl, tbl, "v >= 10"); n != 6 {
				t.Fatalf("%d rows committed, want 6", n)
			}
			// Not left pinned: statements after the committed text still spread (statement mode).
			marker := fmt.Sprintf("orm-after-commit-%d", rand.Uint32())
			for range 6 {
				if _, err := db.ExecContext(ctx, "SELECT /* "+marker+" */ COUNT(*) FROM "+tbl); err != nil {
					t.Fatal(err)
				}
			}
			if saw := proxiesThatSawText(cl, marker); balance == "statement" && saw < 2 {
				t.Errorf("after a committed BEGIN..COMMIT text, 6 statements reached %d proxy; the logical connection stayed pinned", saw)
			}
		})
	})
	t.Run("BEGIN..COMMIT text failing halfway, then ROLLBACK", func(t *testing.T) {
		eachMode(t, func(t *testing.T, balance string) {
			tbl := ormTable(t, cl)
			db, _ := onePool(t, cl, balance, "multiStatements=true")
			defer db.Close() // ends any dangling transaction before the table is dropped
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			q := fmt.Sprintf("BEGIN; INSERT INTO %s (v) VALUES (100); INSERT INTO %s_missing (v) VALUES (1); COMMIT", tbl, tbl)
			if _, err := db.ExecContext(ctx, q); err == nil {
				t.Fatal("the text with a missing table succeeded")
			}
			if _, err := db.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				if _, err := db.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (v) VALUES (%d)", tbl, 200+i)); err != nil {
					t.Fatal(err)
				}
			}
			half, after := freshCount(t, cl, tbl, "v = 100"), freshCount(t, cl, tbl, "v >= 200")
			if half != 0 || after != 6 {
				t.Errorf("after the failed batch and ROLLBACK, 6 autocommit INSERTs: other clients see %d of them "+
					"(want 6) and %d row(s) of the rolled-back batch (want 0): the batch's transaction was left "+
					"open on a physical connection that went back to the pool", after, half)
			}
		})
	})
}

// MariaDB sequences keep LASTVAL(s) / PREVIOUS VALUE FOR s per session, like
// LAST_INSERT_ID(): the read right after NEXTVAL / NEXT VALUE FOR must run on the same physical
// connection (MariaDB only).
func TestStatementModeSequenceLastValue(t *testing.T) {
	if !clusterkit.OnMariaDB() {
		t.Skipf("sequences need MariaDB (%s)", lbdtest.EnvBackendDSN)
	}
	cl := lbdtest.NewCluster(t, 3)
	eachMode(t, func(t *testing.T, balance string) {
		tbl := ormTable(t, cl)
		seq := tbl + "_seq"
		admin, _ := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
		if _, err := admin.Exec("CREATE SEQUENCE " + seq); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Exec("DROP SEQUENCE IF EXISTS " + seq) })
		db, _ := onePool(t, cl, balance, "")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var got []string
		read := func(after, q string, want int64) {
			var v sql.NullInt64
			if err := db.QueryRowContext(ctx, q).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if !v.Valid || v.Int64 != want {
				got = append(got, fmt.Sprintf("%s then %s: %s, want %d", after, q, nullInt(v), want))
			}
		}
		var next int64
		if err := db.QueryRowContext(ctx, "SELECT NEXTVAL("+seq+")").Scan(&next); err != nil {
			t.Fatal(err)
		}
		read("SELECT NEXTVAL", "SELECT LASTVAL("+seq+")", next)
		if _, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (NEXTVAL("+seq+"))"); err != nil {
			t.Fatal(err)
		}
		read("INSERT ... NEXTVAL", "SELECT PREVIOUS VALUE FOR "+seq, next+1)
		if len(got) > 0 {
			t.Errorf("on a pool of one: %s", strings.Join(got, "; "))
		}
	})
}

// Regression: with interpolateParams=true, arguments holding quotes, backslashes, ';', '@',
// BEGIN, COMMIT and comment starts are interpolated by go-sql-driver after lbd classified the
// text with its placeholders, so they can neither end nor move a transaction begun with SQL
// text; literal strings holding the same things are skipped by sqlclass. Afterwards nothing is
// left pinned: statements spread over the proxies again.
func TestStatementModeTrickyArgumentsNeverMoveATransaction(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	tricky := []string{
		"O'Reilly", `C:\path\`, `\'; COMMIT; -- `, "a;b@c", "BEGIN", "-- ROLLBACK", "x' OR '1'='1", `"@v"`, "#", "/* COMMIT */",
	}
	literals := []string{
		`'it''s; COMMIT; -- '`, `'a\'; ROLLBACK; #'`, `'user@example.com'`, `"BEGIN; @x"`, `'D:\\dir\\'`,
	}
	eachMode(t, func(t *testing.T, balance string) {
		tbl := ormTable(t, cl)
		db, _ := onePool(t, cl, balance, "interpolateParams=true")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		insertAll := func() {
			for _, s := range tricky {
				if _, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" (name) VALUES (?)", s); err != nil {
					t.Fatalf("insert %q: %v", s, err)
				}
			}
			for _, l := range literals {
				if _, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" (name) VALUES ("+l+")"); err != nil {
					t.Fatalf("insert %s: %v", l, err)
				}
			}
		}
		if _, err := db.ExecContext(ctx, "BEGIN"); err != nil {
			t.Fatal(err)
		}
		insertAll()
		var inside int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl).Scan(&inside); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		if want := len(tricky) + len(literals); inside != want {
			t.Errorf("inside the transaction %d rows, want %d", inside, want)
		}
		if n := freshCount(t, cl, tbl, "1 = 1"); n != 0 {
			t.Errorf("after ROLLBACK other clients see %d rows, want 0", n)
		}
		insertAll() // autocommit now
		for _, s := range tricky {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl+" WHERE name = ?", s).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("%q: %d rows, want 1", s, n)
			}
		}
		marker := fmt.Sprintf("orm-tricky-%d", rand.Uint32())
		for range 6 {
			if _, err := db.ExecContext(ctx, "SELECT /* "+marker+" */ COUNT(*) FROM "+tbl+" WHERE name <> ?", "@x'; BEGIN"); err != nil {
				t.Fatal(err)
			}
		}
		if saw := proxiesThatSawText(cl, marker); balance == "statement" && saw < 2 {
			t.Errorf("6 statements after the tricky ones reached %d proxy; something pinned the logical connection", saw)
		}
	})
}

// Regression: a statement cancelled by its context in statement mode, while its logical
// connection is bound (through the pool, a *sql.Conn, a *sql.Tx, a pinned session, a prepared
// statement, and while reading rows), fails with the context's error; the next statement works
// and no physical connection is leaked: lbd's count matches the proxies' (give or take the one
// probe connection a triggered probe keeps per proxy) and nothing stays in use.
func TestStatementModeCancelledStatementLeaksNothing(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	eachMode(t, func(t *testing.T, balance string) {
		tbl := ormTable(t, cl)
		db, c := clusterkit.OpenDB(t, cl, "balance="+balance, clusterkit.Quiet()...)
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(4)
		bg := context.Background()
		if _, err := db.ExecContext(bg, "INSERT INTO "+tbl+" (v) VALUES (1), (2), (3), (4), (5)"); err != nil {
			t.Fatal(err)
		}
		slow := func(on bool) {
			for _, p := range cl.Proxies() {
				p.SetLatency(map[bool]time.Duration{true: 150 * time.Millisecond}[on])
			}
		}
		update := "UPDATE " + tbl + " SET v = v WHERE id = 1"
		cases := []struct {
			name string
			run  func(ctx context.Context) error
		}{
			{"pool", func(ctx context.Context) error { _, err := db.ExecContext(ctx, update); return err }},
			{"Conn", func(ctx context.Context) error {
				cn, err := db.Conn(bg)
				if err != nil {
					return err
				}
				defer cn.Close()
				_, err = cn.ExecContext(ctx, update)
				return err
			}},
			{"Tx", func(ctx context.Context) error {
				tx, err := db.BeginTx(bg, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				_, err = tx.ExecContext(ctx, update)
				return err
			}},
			{"pinned Conn", func(ctx context.Context) error {
				cn, err := db.Conn(bg)
				if err != nil {
					return err
				}
				defer cn.Close()
				slow(false)
				_, err = cn.ExecContext(bg, "SET @orm_pinned = 1")
				slow(true)
				if err != nil {
					return err
				}
				_, err = cn.ExecContext(ctx, update)
				return err
			}},
			{"prepared", func(ctx context.Context) error {
				st, err := db.PrepareContext(bg, "SELECT v FROM "+tbl+" WHERE id = ?")
				if err != nil {
					return err
				}
				defer st.Close()
				var v int
				return st.QueryRowContext(ctx, 1).Scan(&v)
			}},
			{"rows", func(ctx context.Context) error {
				slow(false)
				defer slow(true)
				rows, err := db.QueryContext(ctx, "SELECT v FROM "+tbl+" ORDER BY id")
				if err != nil {
					return err
				}
				defer rows.Close()
				rows.Next()
				<-ctx.Done()
				// database/sql closes rows whose context ended on a goroutine of its own; the
				// logical connection goes back to the pool once it has.
				testkit.WaitFor(t, 5*time.Second, "database/sql to close the rows of the ended context", func() bool {
					return db.Stats().InUse == 0
				})
				for rows.Next() {
				}
				return rows.Err()
			}},
		}
		for round := range 2 {
			for _, tc := range cases {
				slow(true)
				ctx, cancel := context.WithTimeout(bg, 40*time.Millisecond)
				err := tc.run(ctx)
				cancel()
				slow(false)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("round %d, %s: error %v, want the context's", round, tc.name, err)
				}
				var n int
				if err := db.QueryRowContext(bg, "SELECT COUNT(*) FROM "+tbl).Scan(&n); err != nil || n != 5 {
					t.Fatalf("round %d, statement after cancelled %s: %d rows, %v", round, tc.name, n, err)
				}
			}
		}
		var state string
		deadline := time.Now().Add(5 * time.Second)
		for {
			st := c.Stats()
			probed, inUse := 0, 0
			for _, ns := range st.Nodes {
				if ns.Probes > 0 {
					probed++
				}
				inUse += ns.InUse
			}
			proxies := 0
			for _, n := range clusterkit.ProxyCounts(cl) {
				proxies += n
			}
			if inUse == 0 && proxies >= st.Open() && proxies <= st.Open()+probed && st.Logical == db.Stats().OpenConnections {
				break
			}
			state = fmt.Sprintf("lbd open %d, in use %d, logical %d; proxies %v (%d probed); database/sql open %d",
				st.Open(), inUse, st.Logical, clusterkit.ProxyCounts(cl), probed, db.Stats().OpenConnections)
			if time.Now().After(deadline) {
				t.Fatalf("physical connections leaked: %s", state)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := c.Stats(); st.Open() > db.Stats().OpenConnections+2 {
			t.Errorf("%d physical connections open for %d logical ones", st.Open(), db.Stats().OpenConnections)
		}
	})
}
