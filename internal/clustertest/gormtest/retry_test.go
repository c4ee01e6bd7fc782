package gormtest

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/gormplugin"
)

// pluginRetries is quiet() with the Connector's own read retries off (retryReads=false), so
// that what these tests see is the plugin's RetryReads, which acts only then.
func pluginRetries() []lbd.Option { return append(quiet(), lbd.WithRetryReads(false)) }

// hooked counts AfterFind calls, to check that a retried query still runs GORM's after-query
// hooks, once.
type hooked struct {
	ID   int64
	Name string
	Qty  int
}

var afterFinds atomic.Int64

func (*hooked) AfterFind(*gorm.DB) error {
	afterFinds.Add(1)
	return nil
}

// failOnce makes the proxy of the one pooled connection answer the next statement with a
// fatal error, and returns a check that, after the statement, the connection was retired.
func (e *env) failOnce(t *testing.T) func() {
	t.Helper()
	at := e.onlyConn(t)
	p := e.cl.Proxy(at)
	before, closed := e.node(t, at), closedConns(e.c, p)
	p.FailNext(1, errInitializing)
	return func() {
		t.Helper()
		if after := e.node(t, at); after.Retired != before.Retired+1 || after.FatalErrors != before.FatalErrors+1 {
			t.Fatalf("retired %d→%d, fatal %d→%d; want both +1", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
		}
		waitForClose(t, e.c, p, closed)
		// The fatal error may have brought the node's probe forward (lbd does so at most once
		// a second per node); let such a probe run now, so that it cannot take a failure
		// injected later for the application. Not a verdict: when none was asked for, none
		// comes, and nothing is pending either.
		settle := time.Now().Add(1500 * time.Millisecond)
		for e.node(t, at).Probes == before.Probes && time.Now().Before(settle) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// With RetryReads, a read that hits a fatal error once succeeds for the caller,
// through every GORM read path.
func TestRetryReadsHidesOneFatalError(t *testing.T) {
	eachBalance(t, retryReadsHidesOneFatalError)
}

func retryReadsHidesOneFatalError(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{RetryReads: true}, pluginRetries()...)
	if err := e.tbl().Create([]item{{Name: "a", Qty: 1}, {Name: "b", Qty: 2}}).Error; err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name string
		run  func() error
	}{
		{"First", func() error {
			var got item
			err := e.tbl().Where("name = ?", "b").First(&got).Error
			if err == nil && got.Qty != 2 {
				t.Errorf("First read %+v", got)
			}
			return err
		}},
		{"Find+AfterFind", func() error {
			afterFinds.Store(0)
			var got []hooked
			err := e.tbl().Order("id").Find(&got).Error
			if err == nil && (len(got) != 2 || afterFinds.Load() != 2) {
				t.Errorf("Find read %+v with %d AfterFind calls, want 2 rows and 2 calls", got, afterFinds.Load())
			}
			return err
		}},
		{"Count", func() error {
			var n int64
			err := e.tbl().Count(&n).Error
			if err == nil && n != 2 {
				t.Errorf("Count = %d", n)
			}
			return err
		}},
		{"Row", func() error {
			var n int
			return e.tbl().Select("qty").Where("name = ?", "a").Row().Scan(&n)
		}},
		{"Rows", func() error {
			rows, err := e.tbl().Select("name").Rows()
			if err != nil {
				return err
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				n++
			}
			if n != 2 {
				t.Errorf("Rows gave %d rows", n)
			}
			return rows.Err()
		}},
		{"Raw.Scan", func() error {
			var got []item
			err := e.db.Raw("SELECT * FROM "+e.table+" WHERE qty > ?", 0).Scan(&got).Error
			if err == nil && len(got) != 2 {
				t.Errorf("Raw.Scan read %+v", got)
			}
			return err
		}},
	}
	for _, r := range reads {
		check := e.failOnce(t)
		if err := r.run(); err != nil {
			t.Fatalf("%s: the caller saw %v; want the retry to hide it", r.name, err)
		}
		check()
	}
	logs := e.log.lbdErrors()
	if len(logs) != len(reads) {
		t.Fatalf("plugin logged %d lines for %d fatal errors: %q", len(logs), len(reads), logs)
	}
	for _, l := range logs {
		if !containsAll(l, "reason oceanbase-8000-8999", "retrying the read once") {
			t.Errorf("log line %q does not tell the reason and the retry", l)
		}
	}
}

// RetryReads also works with GORM's prepared-statement cache: the cached statement is
// prepared again on the connection database/sql hands the retry.
func TestRetryReadsWithPreparedStatements(t *testing.T) {
	eachBalance(t, retryReadsWithPreparedStatements)
}

func retryReadsWithPreparedStatements(t *testing.T, balance string) {
	e := setupWith(t, balance, &gorm.Config{PrepareStmt: true}, gormplugin.Plugin{RetryReads: true}, pluginRetries()...)
	if err := e.tbl().Create(&item{Name: "a", Qty: 1}).Error; err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second round finds the statement in the cache
		check := e.failOnce(t)
		var got item
		if err := e.tbl().Where("name = ?", "a").First(&got).Error; err != nil || got.Qty != 1 {
			t.Fatalf("first: %+v, %v", got, err)
		}
		check()
	}
}

// Without RetryReads the same failure reaches the caller, once.
func TestNoRetryWithoutRetryReads(t *testing.T) {
	eachBalance(t, noRetryWithoutRetryReads)
}

func noRetryWithoutRetryReads(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{}, pluginRetries()...)
	check := e.failOnce(t)
	var got item
	if err := e.tbl().First(&got).Error; mysqlNumber(err) != 8001 {
		t.Fatalf("first returned %v, want error 8001", err)
	}
	check()
	var n int64
	if err := e.tbl().Count(&n).Error; err != nil {
		t.Fatalf("next statement: %v", err)
	}
}

// Writes, Exec and reads inside a transaction are never retried.
func TestRetryReadsLeavesWritesAndTransactionsAlone(t *testing.T) {
	eachBalance(t, retryReadsLeavesWritesAndTransactionsAlone)
}

func retryReadsLeavesWritesAndTransactionsAlone(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{RetryReads: true}, pluginRetries()...)
	check := e.failOnce(t)
	if err := e.tbl().Create(&item{Name: "a", Qty: 1}).Error; mysqlNumber(err) != 8001 {
		t.Fatalf("create returned %v, want error 8001", err)
	}
	check()
	if n := e.count(t); n != 0 {
		t.Fatalf("%d rows after the failed create", n)
	}

	check = e.failOnce(t)
	if err := e.db.Exec("UPDATE " + e.table + " SET qty = 0").Error; mysqlNumber(err) != 8001 {
		t.Fatalf("exec returned %v, want error 8001", err)
	}
	check()

	check = e.failOnce(t)
	if err := e.db.Raw("CALL no_such_procedure()").Row().Err(); mysqlNumber(err) != 8001 {
		t.Fatalf("CALL returned %v, want error 8001 (not a read)", err)
	}
	check()

	at := e.onlyConn(t)
	err := e.db.Transaction(func(tx *gorm.DB) error {
		e.cl.Proxy(at).FailNext(1, errInitializing)
		var n int64
		return tx.Table(e.table).Count(&n).Error
	})
	if mysqlNumber(err) != 8001 {
		t.Fatalf("read in a transaction returned %v, want error 8001", err)
	}
	for _, l := range e.log.lbdErrors() {
		if strings.Contains(l, "retrying") {
			t.Errorf("plugin retried: %q", l)
		}
	}
	if got := len(e.log.lbdErrors()); got != 4 {
		t.Errorf("plugin logged %d lines for 4 fatal errors", got)
	}
}

// A fatal error at the COMMIT of GORM's default transaction is reported too.
func TestFatalCommitIsLogged(t *testing.T) {
	eachBalance(t, fatalCommitIsLogged)
}

func fatalCommitIsLogged(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{}, pluginRetries()...)
	at := e.onlyConn(t)
	err := e.db.Callback().Create().Before("gorm:commit_or_rollback_transaction").Register("test:fail_commit", func(db *gorm.DB) {
		if db.Error == nil {
			e.cl.Proxy(at).FailNext(1, errInitializing)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.tbl().Create(&item{Name: "a", Qty: 1}).Error; mysqlNumber(err) != 8001 {
		t.Fatalf("create returned %v, want error 8001 from COMMIT", err)
	}
	if logs := e.log.lbdErrors(); len(logs) != 1 || !strings.Contains(logs[0], "8001") {
		t.Fatalf("plugin logged %q, want one line for the failed COMMIT", logs)
	}
	if e.node(t, at).Retired != 1 {
		t.Fatalf("the connection whose COMMIT failed was not retired")
	}
}

// An error the operation already carried is not logged again nor retried, and the statement
// does not run.
func TestEarlierErrorIsLeftAlone(t *testing.T) {
	eachBalance(t, earlierErrorIsLeftAlone)
}

func earlierErrorIsLeftAlone(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{RetryReads: true}, pluginRetries()...)
	p := e.cl.Proxy(e.onlyConn(t))
	statements := p.Statements()
	failed := e.db.Session(&gorm.Session{}).Table(e.table).Where("qty > ?", 0)
	failed.AddError(errInitializing) // as left by an earlier statement on the same chain
	var n int64
	if err := failed.Count(&n).Error; err != errInitializing {
		t.Fatalf("count returned %v, want the earlier error", err)
	}
	if logs := e.log.lbdErrors(); len(logs) != 0 {
		t.Fatalf("plugin logged %q for an error that did not come from the statement", logs)
	}
	if p.Statements() != statements {
		t.Fatal("the statement ran although the chain carried an error")
	}
}
