package statementmode

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// modeCase is one TestSameResultsInBothModes case: run does something through db (on its own
// fresh table tbl, columns id BIGINT AUTO_INCREMENT and v INT) and describes the outcome.
type modeCase struct {
	name string
	// pools are the MaxOpenConns values the case runs with; nil means every group. Cases that
	// rely on session state through db itself need a single connection; cases that hold two
	// connections at once need more than one.
	pools []int
	// memSkip, when set, is why the in-memory engine cannot run the case (it runs on MariaDB).
	memSkip string
	// statementSkip, when set, is why statement mode does not give connection mode's outcome
	// on purpose (the session a pool of one relies on is reset for its next user).
	statementSkip string
	run           func(ctx context.Context, db *sql.DB, tbl string) (string, error)
	want          string
	// statementWant, when set, is statement mode's outcome where it differs on purpose.
	statementWant string
}

// TestSameResultsInBothModes runs session-sensitive work through database/sql in both balance
// modes and checks each outcome against the value written in the table. In statement mode
// consecutive statements of one logical connection go to different proxies unless something
// pins them, so a missing pin shows up as a wrong result here.
func TestSameResultsInBothModes(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	admin, _ := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...) // creates and drops the tables
	var seq atomic.Int64
	runID := rand.Uint32()
	newTable := func(t *testing.T) string {
		t.Helper()
		name := fmt.Sprintf("lbd_modes_%d_%d", runID, seq.Add(1))
		if _, err := admin.Exec("CREATE TABLE " + name + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, v INT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := admin.Exec("DROP TABLE IF EXISTS " + name); err != nil {
				t.Errorf("drop %s: %v", name, err)
			}
		})
		return name
	}
	// marker makes a statement's text unique, to find which proxies saw it.
	marker := func() string { return fmt.Sprintf("lbd-marker-%d-%d", runID, seq.Add(1)) }

	cases := []modeCase{
		{
			name: "BeginTx commit",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				return apiTransaction(ctx, db, tbl, []int{1, 2, 3}, (*sql.Tx).Commit)
			},
			want: "inside=3/6 after=3/6",
		},
		{
			name: "BeginTx rollback",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				return apiTransaction(ctx, db, tbl, []int{5}, (*sql.Tx).Rollback)
			},
			want: "inside=1/5 after=0/0",
		},
		{
			name: "SQL BEGIN and ROLLBACK on a Conn",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				return onConn(ctx, db, func(cn *sql.Conn) (string, error) {
					return textTransaction(ctx, cn, tbl, "BEGIN", "ROLLBACK")
				})
			},
			want: "inside=2/3 after=0/0",
		},
		{
			name: "SQL START TRANSACTION and COMMIT on a Conn",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				return onConn(ctx, db, func(cn *sql.Conn) (string, error) {
					return textTransaction(ctx, cn, tbl, "START TRANSACTION", "COMMIT")
				})
			},
			want: "inside=2/3 after=2/3",
		},
		{
			name:  "SQL BEGIN and ROLLBACK through db",
			pools: []int{1},
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				return textTransaction(ctx, db, tbl, "BEGIN", "ROLLBACK")
			},
			want: "inside=2/3 after=0/0",
		},
		{
			name: "Conn statements outside a transaction",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				m := marker()
				ids := map[int64]bool{}
				_, err := onConn(ctx, db, func(cn *sql.Conn) (string, error) {
					for i := range 8 {
						var id int64
						if err := cn.QueryRowContext(ctx, "SELECT /* "+m+" */ CONNECTION_ID()").Scan(&id); err != nil {
							return "", err
						}
						ids[id] = true
						if _, err := cn.ExecContext(ctx, "INSERT INTO "+tbl+" /* "+m+" */ (v) VALUES (?)", i); err != nil {
							return "", err
						}
					}
					return "", nil
				})
				return fmt.Sprintf("connection ids=%d proxies=%d", len(ids), proxiesThatSawText(cl, m)), err
			},
			want: "connection ids=1 proxies=1",
			// Statement mode balances a *sql.Conn's statements outside a transaction.
			statementWant: "connection ids=3 proxies=3",
		},
		{
			name: "LAST_INSERT_ID on a Conn",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				return onConn(ctx, db, func(cn *sql.Conn) (string, error) {
					return readLastInsertID(ctx, cn, tbl)
				})
			},
			want: "result=2 select=2",
		},
		{
			name:  "LAST_INSERT_ID right after INSERT through db",
			pools: []int{1},
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				return readLastInsertID(ctx, db, tbl)
			},
			want: "result=2 select=2",
		},
		{
			name:  "ROW_COUNT right after UPDATE through db",
			pools: []int{1},
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				if _, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (1), (2), (3), (4)"); err != nil {
					return "", err
				}
				res, err := db.ExecContext(ctx, "UPDATE "+tbl+" SET v = v + 10 WHERE v <= 3")
				if err != nil {
					return "", err
				}
				affected, err := res.RowsAffected()
				if err != nil {
					return "", err
				}
				var rc sql.NullInt64
				err = db.QueryRowContext(ctx, "SELECT ROW_COUNT()").Scan(&rc)
				return fmt.Sprintf("affected=%d row_count=%s", affected, nullInt(rc)), err
			},
			want: "affected=3 row_count=3",
		},
		{
			name:  "FOUND_ROWS after SQL_CALC_FOUND_ROWS through db",
			pools: []int{1},
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				if _, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (5), (6), (7), (8), (9)"); err != nil {
					return "", err
				}
				var first int
				if err := db.QueryRowContext(ctx, "SELECT SQL_CALC_FOUND_ROWS v FROM "+tbl+" ORDER BY v LIMIT 1").Scan(&first); err != nil {
					return "", err
				}
				var found sql.NullInt64
				err := db.QueryRowContext(ctx, "SELECT FOUND_ROWS()").Scan(&found)
				return fmt.Sprintf("first=%d found=%s", first, nullInt(found)), err
			},
			want: "first=5 found=5",
		},
		{
			name:          "user variable through db",
			pools:         []int{1},
			statementSkip: "statement mode resets the session when database/sql hands the connection out again (session_replay_test.go)",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				if _, err := db.ExecContext(ctx, "SET @lbd_x = 42"); err != nil {
					return "", err
				}
				if err := someStatements(ctx, db, tbl, 6); err != nil {
					return "", err
				}
				var x sql.NullInt64
				err := db.QueryRowContext(ctx, "SELECT @lbd_x").Scan(&x)
				return "x=" + nullInt(x), err
			},
			want: "x=42",
		},
		{
			name:          "GET_LOCK holds the session through db",
			pools:         []int{1},
			statementSkip: "statement mode resets the session when database/sql hands the connection out again (session_replay_test.go)",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				lock := marker()
				var got, mine, released sql.NullInt64
				if err := db.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", lock).Scan(&got); err != nil {
					return "", err
				}
				if err := someStatements(ctx, db, tbl, 6); err != nil {
					return "", err
				}
				if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", lock).Scan(&mine); err != nil {
					return "", err
				}
				err := db.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", lock).Scan(&released)
				return fmt.Sprintf("got=%s mine=%s released=%s", nullInt(got), nullInt(mine), nullInt(released)), err
			},
			want: "got=1 mine=1 released=1",
		},
		{
			name:          "temporary table through db",
			pools:         []int{1},
			statementSkip: "statement mode resets the session when database/sql hands the connection out again (session_replay_test.go)",
			memSkip:       "the in-memory engine (go-mysql-server) has no temporary tables",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				tmp := "tmp_" + tbl
				if _, err := db.ExecContext(ctx, "CREATE TEMPORARY TABLE "+tmp+" (v INT NOT NULL)"); err != nil {
					return "", err
				}
				if err := someStatements(ctx, db, tbl, 4); err != nil {
					return "", err
				}
				for v := range 4 {
					if _, err := db.ExecContext(ctx, "INSERT INTO "+tmp+" (v) VALUES (?)", v+1); err != nil {
						return "", err
					}
				}
				var n, sum int
				if err := db.QueryRowContext(ctx, "SELECT COUNT(*), SUM(v) FROM "+tmp).Scan(&n, &sum); err != nil {
					return "", err
				}
				_, err := db.ExecContext(ctx, "DROP TEMPORARY TABLE "+tmp)
				return fmt.Sprintf("%d/%d", n, sum), err
			},
			want: "4/10",
		},
		{
			name: "prepared statement run 20 times",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				if err := insertValues(ctx, db, tbl, 20); err != nil {
					return "", err
				}
				stmt, err := db.PrepareContext(ctx, "SELECT v * 3 FROM "+tbl+" WHERE v = ?")
				if err != nil {
					return "", err
				}
				sum, wrong := 0, 0
				for v := 1; v <= 20; v++ {
					var got int
					if err := stmt.QueryRowContext(ctx, v).Scan(&got); err != nil {
						stmt.Close()
						return "", fmt.Errorf("execution %d: %w", v, err)
					}
					if got != 3*v {
						wrong++
					}
					sum += got
				}
				if err := stmt.Close(); err != nil {
					return "", err
				}
				return fmt.Sprintf("sum=%d wrong=%d", sum, wrong), nil
			},
			want: "sum=630 wrong=0",
		},
		{
			name: "prepared statements inside a transaction",
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				outer, err := db.PrepareContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (?)")
				if err != nil {
					return "", err
				}
				defer outer.Close()
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					return "", err
				}
				defer tx.Rollback()
				ins, err := tx.PrepareContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (?)")
				if err != nil {
					return "", err
				}
				for v := 1; v <= 4; v++ {
					if _, err := ins.ExecContext(ctx, v); err != nil {
						return "", err
					}
				}
				if _, err := tx.StmtContext(ctx, outer).ExecContext(ctx, 5); err != nil { // db's statement, in the transaction
					return "", err
				}
				inside, err := countRows(ctx, tx, tbl)
				if err != nil {
					return "", err
				}
				if err := tx.Commit(); err != nil {
					return "", err
				}
				after, err := countRows(ctx, db, tbl)
				return fmt.Sprintf("inside=%s after=%s", inside, after), err
			},
			want: "inside=5/15 after=5/15",
		},
		{
			name:  "rows read while other statements run",
			pools: []int{4},
			run: func(ctx context.Context, db *sql.DB, tbl string) (string, error) {
				if err := insertValues(ctx, db, tbl, 12); err != nil {
					return "", err
				}
				rows, err := db.QueryContext(ctx, "SELECT v FROM "+tbl+" ORDER BY v")
				if err != nil {
					return "", err
				}
				defer rows.Close()
				n, sum := 0, 0
				for rows.Next() {
					var v int
					if err := rows.Scan(&v); err != nil {
						return "", err
					}
					var below int // another connection, while these rows are open
					if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl+" WHERE v <= ?", v).Scan(&below); err != nil {
						return "", err
					}
					n++
					sum += below
				}
				return fmt.Sprintf("rows=%d sum=%d", n, sum), rows.Err()
			},
			want: "rows=12 sum=78",
		},
	}

	for _, balance := range []string{"connection", "statement"} {
		t.Run(balance, func(t *testing.T) {
			for _, pool := range []int{4, 1} {
				t.Run(fmt.Sprintf("maxOpen=%d", pool), func(t *testing.T) {
					for _, tc := range cases {
						if tc.pools != nil && !slices.Contains(tc.pools, pool) {
							continue
						}
						t.Run(tc.name, func(t *testing.T) {
							if tc.memSkip != "" && !clusterkit.OnMariaDB() {
								t.Skipf("%s; it runs against MariaDB (%s)", tc.memSkip, lbdtest.EnvBackendDSN)
							}
							if tc.statementSkip != "" && balance == "statement" {
								t.Skip(tc.statementSkip)
							}
							want := tc.want
							if tc.statementWant != "" && balance == "statement" {
								want = tc.statementWant
							}
							tbl := newTable(t) // dropped after db below is closed
							db, _ := clusterkit.OpenDB(t, cl, "balance="+balance, clusterkit.Quiet()...)
							db.SetMaxOpenConns(pool)
							db.SetMaxIdleConns(pool)
							ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
							defer cancel()
							got, err := tc.run(ctx, db, tbl)
							if err != nil {
								t.Fatalf("error: %v (result so far %q)", err, got)
							}
							if got != want {
								t.Fatalf("result %q, want %q", got, want)
							}
						})
					}
				})
			}
		})
	}
}

// sqlRunner is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// countRows returns "rows/sum of v" of tbl as q sees it.
func countRows(ctx context.Context, q sqlRunner, tbl string) (string, error) {
	var n int
	var sum sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*), SUM(v) FROM "+tbl).Scan(&n, &sum); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d/%d", n, sum.Int64), nil
}

func nullInt(v sql.NullInt64) string {
	if !v.Valid {
		return "NULL"
	}
	return fmt.Sprint(v.Int64)
}

// onConn runs f on a dedicated *sql.Conn and closes it.
func onConn(ctx context.Context, db *sql.DB, f func(cn *sql.Conn) (string, error)) (string, error) {
	cn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer cn.Close()
	return f(cn)
}

// textTransaction opens a transaction with SQL text (begin), inserts v=1 and v=2 with
// statements in between, counts, ends it with SQL text (end) and counts again.
func textTransaction(ctx context.Context, q sqlRunner, tbl, begin, end string) (string, error) {
	if _, err := q.ExecContext(ctx, begin); err != nil {
		return "", err
	}
	for v := 1; v <= 2; v++ {
		if _, err := q.ExecContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (?)", v); err != nil {
			return "", err
		}
		if err := someStatements(ctx, q, tbl, 3); err != nil {
			return "", err
		}
	}
	inside, err := countRows(ctx, q, tbl)
	if err != nil {
		return "", err
	}
	if _, err := q.ExecContext(ctx, end); err != nil {
		return "", err
	}
	after, err := countRows(ctx, q, tbl)
	return fmt.Sprintf("inside=%s after=%s", inside, after), err
}

// apiTransaction inserts values in a transaction from db.BeginTx, counts the rows inside it,
// ends it with end and counts again from db.
func apiTransaction(ctx context.Context, db *sql.DB, tbl string, values []int, end func(*sql.Tx) error) (string, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	for _, v := range values {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (?)", v); err != nil {
			return "", err
		}
	}
	inside, err := countRows(ctx, tx, tbl)
	if err != nil {
		return "", err
	}
	if err := end(tx); err != nil {
		return "", err
	}
	after, err := countRows(ctx, db, tbl)
	return fmt.Sprintf("inside=%s after=%s", inside, after), err
}

// readLastInsertID inserts two rows into a fresh table and reads LAST_INSERT_ID() right after.
func readLastInsertID(ctx context.Context, q sqlRunner, tbl string) (string, error) {
	var res sql.Result
	for v := 1; v <= 2; v++ {
		var err error
		if res, err = q.ExecContext(ctx, "INSERT INTO "+tbl+" (v) VALUES (?)", v); err != nil {
			return "", err
		}
	}
	id, err := res.LastInsertId()
	if err != nil {
		return "", err
	}
	var sel sql.NullInt64
	err = q.QueryRowContext(ctx, "SELECT LAST_INSERT_ID()").Scan(&sel)
	return fmt.Sprintf("result=%d select=%s", id, nullInt(sel)), err
}

// someStatements runs n harmless reads, which in statement mode would move an unpinned
// connection to other proxies.
func someStatements(ctx context.Context, q sqlRunner, tbl string, n int) error {
	for range n {
		var c int
		if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+tbl).Scan(&c); err != nil {
			return err
		}
	}
	return nil
}

// insertValues inserts v = 1..n.
func insertValues(ctx context.Context, q sqlRunner, tbl string, n int) error {
	var sb strings.Builder
	for v := 1; v <= n; v++ {
		if v > 1 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "(%d)", v)
	}
	_, err := q.ExecContext(ctx, "INSERT INTO "+tbl+" (v) VALUES "+sb.String())
	return err
}
