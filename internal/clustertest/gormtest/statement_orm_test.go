package gormtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/gormplugin"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// GORM over lbd in both balance modes: what an application sees must not depend on the mode.
// The in-memory backend runs autocommit statements safely but does not isolate concurrent
// transactions (see lbdtest), so concurrent cases that need transactions run on MariaDB only
// (LBD_TEST_MYSQL_DSN), as do the server-side prepared-statement counts.

func onMariaDB() bool { return os.Getenv(lbdtest.EnvBackendDSN) != "" }

// preparedOnServer returns MariaDB's Prepared_stmt_count (server-wide: other clients count too).
func preparedOnServer(t *testing.T, cl *lbdtest.Cluster) int {
	t.Helper()
	direct, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s", cl.User(), cl.Password(), cl.BackendAddr(), cl.Database()))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	var name string
	var n int
	if err := direct.QueryRow("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// preparedWithin waits until Prepared_stmt_count is at most limit. The count is server-wide,
// so a burst from another client may pass above it for a moment; a leak stays above.
func preparedWithin(t *testing.T, cl *lbdtest.Cluster, limit int, what string) {
	t.Helper()
	testkit.WaitForState(t, 5*time.Second, what+": Prepared_stmt_count at most "+fmt.Sprint(limit), func() (bool, string) {
		n := preparedOnServer(t, cl)
		return n <= limit, fmt.Sprintf("Prepared_stmt_count %d", n)
	})
}

func allUp(c *lbd.Connector) bool {
	for _, ns := range c.Stats().Nodes {
		if ns.State != lbd.StateUp {
			return false
		}
	}
	return true
}

// Regression: GORM's prepared-statement cache (PrepareStmt) keeps each *sql.Stmt for the life of
// the DB. Under 16 goroutines creating, reading back and updating rows, every proxy is
// restarted in turn: only statements in flight at a stop may fail; once the proxies are back
// everything works again, with every row read back as written. On MariaDB the prepared
// statements on the server stay bounded by queries × physical connections while it runs, and
// are all gone once GORM's cache is closed and no connection is kept idle.
func TestGormPreparedStatementsAcrossProxyRestarts(t *testing.T) {
	eachBalance(t, func(t *testing.T, balance string) {
		const maxOpen, workers = 8, 16
		e := setupWith(t, balance, &gorm.Config{PrepareStmt: true, SkipDefaultTransaction: true}, gormplugin.Plugin{}, fast()...)
		e.sqlDB.SetMaxOpenConns(maxOpen)
		e.sqlDB.SetMaxIdleConns(maxOpen)
		before := 0
		if onMariaDB() {
			before = preparedOnServer(t, e.cl)
		}
		// Five query texts at most (create, read, update, and GORM's CREATE/DROP TABLE), each
		// prepared at most once per physical connection: up to maxOpen logical connections
		// plus one spare per proxy but one.
		limit := before + 5*(maxOpen+3)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var (
			wg        sync.WaitGroup
			steady    atomic.Bool  // no proxy is restarting: every operation must succeed
			epoch     atomic.Int64 // bumped when steady changes
			steadyErr atomic.Value
			wrong     atomic.Value
			done      [workers]atomic.Int64 // operations each worker has finished
		)
		steady.Store(true)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					startEpoch, wasSteady := epoch.Load(), steady.Load()
					it := item{Name: fmt.Sprintf("w%d-%d", w, i), Qty: i}
					err := e.tbl().Create(&it).Error
					if err == nil {
						var got item
						if err = e.tbl().Where("id = ?", it.ID).First(&got).Error; err == nil && got.Name != it.Name {
							wrong.Store(fmt.Sprintf("id %d read back as %q, created as %q", it.ID, got.Name, it.Name))
						}
					}
					if err == nil {
						err = e.tbl().Where("id = ?", it.ID).Update("qty", gorm.Expr("qty + ?", 1)).Error
					}
					if err != nil && wasSteady && epoch.Load() == startEpoch {
						steadyErr.Store(err)
					}
					done[w].Add(1)
				}
			}()
		}
		// finished waits until every worker has finished n more operations: with n = 1, every
		// operation that had started before the call has ended.
		finished := func(n int64, what string) {
			t.Helper()
			var from [workers]int64
			for w := range done {
				from[w] = done[w].Load()
			}
			testkit.WaitForState(t, 10*time.Second, what, func() (bool, string) {
				for w := range done {
					if got := done[w].Load() - from[w]; got < n {
						return false, fmt.Sprintf("worker %d finished %d of %d", w, got, n)
					}
				}
				return true, ""
			})
		}
		// settle runs steady load, every worker a few whole operations, before the next check.
		settle := func(what string) {
			t.Helper()
			finished(3, what+": every worker running operations while every proxy is up")
			if onMariaDB() {
				preparedWithin(t, e.cl, limit, what)
			}
		}
		settle("before any restart")
		for i, p := range e.cl.Proxies() {
			steady.Store(false)
			epoch.Add(1)
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
			// The outage lasts until lbd has seen it: the node is down, so the restart is
			// one lbd has to recover from.
			waitFor(t, 10*time.Second, fmt.Sprintf("proxy %d seen down", i), func() bool { return e.node(t, i).State != lbd.StateUp })
			if err := p.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, "every proxy up again", func() bool { return allUp(e.c) })
			finished(1, "operations that started during the outage to end")
			steady.Store(true)
			epoch.Add(1)
			settle(fmt.Sprintf("after restarting proxy %d", i))
		}
		cancel()
		wg.Wait()
		if err, _ := steadyErr.Load().(error); err != nil {
			t.Errorf("an operation failed while every proxy was up: %v", err)
		}
		if w, _ := wrong.Load().(string); w != "" {
			t.Errorf("wrong row: %s", w)
		}
		// No physical connection leaked across the restarts: the proxies hold lbd's connections
		// plus at most one probe connection each, and none is in use.
		testkit.WaitForState(t, 5*time.Second, "no connection leaked after the restarts", func() (bool, string) {
			st := e.c.Stats()
			inUse, proxies := 0, 0
			for _, ns := range st.Nodes {
				inUse += ns.InUse
			}
			for _, p := range e.cl.Proxies() {
				proxies += p.OpenConns()
			}
			ok := inUse == 0 && proxies >= st.Open() && proxies <= st.Open()+len(st.Nodes) && st.Open() <= maxOpen+len(st.Nodes)
			return ok, fmt.Sprintf("lbd open %d, in use %d; proxies hold %d", st.Open(), inUse, proxies)
		})
		var n, bad int64
		if err := e.tbl().Count(&n).Error; err != nil || n == 0 {
			t.Fatalf("count: %d, %v", n, err)
		}
		if err := e.tbl().Where("qty NOT IN (CAST(SUBSTRING_INDEX(name, '-', -1) AS SIGNED), CAST(SUBSTRING_INDEX(name, '-', -1) AS SIGNED) + 1)").Count(&bad).Error; err != nil || bad != 0 {
			t.Errorf("%d rows with a qty neither as created nor updated once (%v)", bad, err)
		}
		if onMariaDB() {
			// Closing GORM's cache closes every *sql.Stmt; with no idle connection kept, the
			// physical connections close too, and with them whatever they still had prepared.
			e.db.ConnPool.(*gorm.PreparedStmtDB).Close()
			e.sqlDB.SetMaxIdleConns(0)
			preparedWithin(t, e.cl, before+2, "after closing GORM's statements and the idle connections")
		}
	})
}

// Regression: Create fills auto-increment IDs into the structs, one row at a time and in
// batches, with GORM's default transaction or without, under concurrency; every ID is the
// inserted row's (read back by ID). On MariaDB GORM uses INSERT ... RETURNING; elsewhere the
// OK packet's last insert id.
func TestGormCreateFillsTheInsertedIDs(t *testing.T) {
	eachBalance(t, func(t *testing.T, balance string) {
		for _, skip := range []bool{true, false} {
			t.Run(fmt.Sprintf("SkipDefaultTransaction=%v", skip), func(t *testing.T) {
				if !skip && !onMariaDB() {
					t.Skipf("concurrent transactions need MariaDB (%s): the in-memory backend does not isolate them", lbdtest.EnvBackendDSN)
				}
				for _, prep := range []bool{false, true} {
					t.Run(fmt.Sprintf("PrepareStmt=%v", prep), func(t *testing.T) {
						e := setupWith(t, balance, &gorm.Config{SkipDefaultTransaction: skip, PrepareStmt: prep}, gormplugin.Plugin{}, quiet()...)
						e.sqlDB.SetMaxOpenConns(6)
						e.sqlDB.SetMaxIdleConns(6)
						createdIDs(t, e)
					})
				}
			})
		}
	})
}

func createdIDs(t *testing.T, e *env) {
	const workers, each = 8, 12
	var (
		mu   sync.Mutex
		ids  = map[int64]string{}
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var made []item
			for i := range each {
				it := item{Name: fmt.Sprintf("one-%d-%d", w, i), Qty: i}
				if err := e.tbl().Create(&it).Error; err != nil {
					fail(err)
					return
				}
				made = append(made, it)
			}
			batch := make([]item, 5)
			for i := range batch {
				batch[i] = item{Name: fmt.Sprintf("batch-%d-%d", w, i), Qty: 100 + i}
			}
			if err := e.tbl().CreateInBatches(&batch, 2).Error; err != nil {
				fail(err)
				return
			}
			made = append(made, batch...)
			for _, it := range made {
				var got item
				if err := e.tbl().Where("id = ?", it.ID).First(&got).Error; err != nil {
					fail(fmt.Errorf("read back id %d (%s): %w", it.ID, it.Name, err))
					continue
				}
				if got.Name != it.Name {
					fail(fmt.Errorf("id %d holds %q, was filled into %q", it.ID, got.Name, it.Name))
				}
				mu.Lock()
				if prev, dup := ids[it.ID]; dup {
					errs = append(errs, fmt.Errorf("id %d filled into both %q and %q", it.ID, prev, it.Name))
				}
				ids[it.ID] = it.Name
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t); n != workers*(each+5) || len(ids) != int(n) {
		t.Fatalf("%d rows, %d distinct IDs, want %d", n, len(ids), workers*(each+5))
	}
}

// Regression: what GORM keeps on one connection stays there in statement mode.
func TestGormTransactionsAndSessionState(t *testing.T) {
	eachBalance(t, func(t *testing.T, balance string) {
		for _, prep := range []bool{false, true} {
			t.Run(fmt.Sprintf("PrepareStmt=%v", prep), func(t *testing.T) {
				e := setupWith(t, balance, &gorm.Config{PrepareStmt: prep}, gormplugin.Plugin{}, quiet()...)
				t.Run("nested transactions", func(t *testing.T) {
					if !onMariaDB() {
						t.Skipf("the in-memory backend has no savepoints; runs on MariaDB (%s)", lbdtest.EnvBackendDSN)
					}
					nestedTransactions(t, e)
				})
				t.Run("SELECT FOR UPDATE then UPDATE", func(t *testing.T) { lockedIncrements(t, e) })
				t.Run("user variable on db.Connection", func(t *testing.T) {
					for i := range 3 {
						var got sql.NullInt64
						err := e.db.Connection(func(tx *gorm.DB) error {
							if err := tx.Exec("SET @orm_x = ?", 40+i).Error; err != nil {
								return err
							}
							for range 4 { // statements that would move an unpinned connection
								if err := tx.Table(e.table).Count(new(int64)).Error; err != nil {
									return err
								}
							}
							return tx.Raw("SELECT @orm_x + 2").Scan(&got).Error
						})
						if err != nil || got.Int64 != int64(42+i) {
							t.Fatalf("SELECT @orm_x + 2 after SET @orm_x = %d: %v, %v", 40+i, got, err)
						}
					}
				})
				// A pool of one hands the same connection out again: connection mode keeps its
				// session, statement mode resets it when database/sql hands it out again (the
				// next user starts clean), never leaving half of it behind.
				t.Run("pool of one: SET, then Raw", func(t *testing.T) {
					e.sqlDB.SetMaxOpenConns(1)
					defer e.sqlDB.SetMaxOpenConns(0)
					if err := e.db.Exec("SET @orm_y = ?", 7).Error; err != nil {
						t.Fatal(err)
					}
					for range 4 {
						if err := e.tbl().Count(new(int64)).Error; err != nil {
							t.Fatal(err)
						}
					}
					var y sql.NullInt64
					err := e.db.Raw("SELECT @orm_y").Scan(&y).Error
					switch {
					case err != nil:
						t.Fatal(err)
					case balance == "connection" && (!y.Valid || y.Int64 != 7):
						t.Fatalf("SELECT @orm_y = %v; want 7", y)
					case balance == "statement" && y.Valid:
						t.Fatalf("SELECT @orm_y = %v; want NULL: the session was not reset for its next user", y)
					}
				})
				t.Run("pool of one: SQL_CALC_FOUND_ROWS, then FOUND_ROWS", func(t *testing.T) {
					e.sqlDB.SetMaxOpenConns(1)
					defer e.sqlDB.SetMaxOpenConns(0)
					for i := range 4 {
						if err := e.tbl().Create(&item{Name: fmt.Sprintf("page-%d", i)}).Error; err != nil {
							t.Fatal(err)
						}
					}
					var total int64
					if err := e.tbl().Count(&total).Error; err != nil || total < 3 {
						t.Fatalf("count %d, %v", total, err)
					}
					for range 3 {
						var page []item
						if err := e.db.Raw("SELECT SQL_CALC_FOUND_ROWS * FROM " + e.table + " ORDER BY id LIMIT 2").Scan(&page).Error; err != nil {
							t.Fatal(err)
						}
						var found int64
						if err := e.db.Raw("SELECT FOUND_ROWS()").Scan(&found).Error; err != nil || found != total || len(page) != 2 {
							t.Fatalf("page of %d, FOUND_ROWS() %d (%v); want 2 and %d", len(page), found, err, total)
						}
					}
				})
			})
		}
	})
}

// nestedTransactions: an inner transaction that fails rolls back to its SAVEPOINT, the next one
// commits, and the outer transaction commits both the outer row and the second inner one.
func nestedTransactions(t *testing.T, e *env) {
	base := fmt.Sprintf("nest-%d", time.Now().UnixNano())
	err := e.db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Table(e.table).Create(&item{Name: base + "-outer", Qty: 1}).Error; err != nil {
			return err
		}
		undo := errors.New("undo the inner transaction")
		if err := tx.Transaction(func(tx2 *gorm.DB) error {
			if err := tx2.Table(e.table).Create(&item{Name: base + "-undone", Qty: 2}).Error; err != nil {
				return err
			}
			return undo
		}); !errors.Is(err, undo) {
			return fmt.Errorf("inner transaction returned %v", err)
		}
		return tx.Transaction(func(tx2 *gorm.DB) error {
			if err := tx2.Table(e.table).Create(&item{Name: base + "-inner", Qty: 3}).Error; err != nil {
				return err
			}
			var inside int64
			if err := tx2.Table(e.table).Where("name LIKE ?", base+"%").Count(&inside).Error; err != nil {
				return err
			}
			if inside != 2 {
				return fmt.Errorf("inside the second inner transaction %d rows, want 2", inside)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := e.tbl().Where("name LIKE ?", base+"%").Order("name").Pluck("name", &names).Error; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names) != fmt.Sprintf("[%s-inner %s-outer]", base, base) {
		t.Fatalf("committed %v, want the outer and the second inner row", names)
	}
}

// lockedIncrements: read a row with FOR UPDATE and write it back incremented, in a
// transaction; concurrently on MariaDB (no increment may be lost), one after another on the
// in-memory backend.
func lockedIncrements(t *testing.T, e *env) {
	row := item{Name: fmt.Sprintf("counter-%d", time.Now().UnixNano())}
	if err := e.tbl().Create(&row).Error; err != nil {
		t.Fatal(err)
	}
	workers, each := 1, 12
	if onMariaDB() {
		workers, each = 6, 8
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				err := e.db.Transaction(func(tx *gorm.DB) error {
					var cur item
					q := tx.Table(e.table).Clauses(clause.Locking{Strength: "UPDATE"})
					if err := q.Where("id = ?", row.ID).First(&cur).Error; err != nil {
						return err
					}
					return tx.Table(e.table).Where("id = ?", row.ID).Update("qty", cur.Qty+1).Error
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	var got item
	if err := e.tbl().Where("id = ?", row.ID).First(&got).Error; err != nil || got.Qty != workers*each {
		t.Fatalf("counter %d (%v), want %d: increments were lost", got.Qty, err, workers*each)
	}
}
