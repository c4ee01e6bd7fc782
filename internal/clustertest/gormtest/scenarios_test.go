package gormtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/gormplugin"
	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// Create, read, update and delete, with the connections spread over every proxy.
func TestCRUDOverEveryProxy(t *testing.T) {
	eachBalance(t, crudOverEveryProxy)
}

func crudOverEveryProxy(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{}, quiet()...)
	e.sqlDB.SetMaxIdleConns(0) // every operation dials, so each one is a fresh pick
	for i := range 12 {
		if err := e.tbl().Create(&item{Name: fmt.Sprintf("item-%02d", i), Qty: i}).Error; err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	var got item
	if err := e.tbl().Where("name = ?", "item-07").First(&got).Error; err != nil || got.Qty != 7 || got.ID == 0 {
		t.Fatalf("first: %+v, %v", got, err)
	}
	res := e.tbl().Where("qty >= ?", 6).Update("qty", gorm.Expr("qty + 100"))
	if res.Error != nil || res.RowsAffected != 6 {
		t.Fatalf("update: %d rows, %v", res.RowsAffected, res.Error)
	}
	var big []item
	if err := e.tbl().Where("qty >= ?", 100).Order("id").Find(&big).Error; err != nil || len(big) != 6 || big[0].Qty != 106 {
		t.Fatalf("find after update: %+v, %v", big, err)
	}
	res = e.tbl().Where("qty < ?", 6).Delete(&item{})
	if res.Error != nil || res.RowsAffected != 6 {
		t.Fatalf("delete: %d rows, %v", res.RowsAffected, res.Error)
	}
	if n := e.count(t); n != 6 {
		t.Fatalf("count after delete = %d, want 6", n)
	}
	adaptertest.EveryProxyServed(t, e.cl)
	adaptertest.NoFatalErrors(t, e.c)
}

// A transaction commits; one failing midway (duplicate key) rolls back and the
// pool stays usable.
func TestTransactionCommitsAndRollsBack(t *testing.T) {
	eachBalance(t, transactionCommitsAndRollsBack)
}

func transactionCommitsAndRollsBack(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{}, quiet()...)
	err := e.db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Table(e.table).Create(&item{ID: 1, Name: "a", Qty: 1}).Error; err != nil {
			return err
		}
		if err := tx.Table(e.table).Create(&item{ID: 2, Name: "b", Qty: 2}).Error; err != nil {
			return err
		}
		return tx.Table(e.table).Where("id = ?", 1).Update("qty", 10).Error
	})
	if err != nil {
		t.Fatalf("committed transaction: %v", err)
	}
	err = e.db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Table(e.table).Create(&item{ID: 3, Name: "c", Qty: 3}).Error; err != nil {
			return err
		}
		return tx.Table(e.table).Create(&item{ID: 1, Name: "dup", Qty: 4}).Error
	})
	if mysqlNumber(err) != 1062 {
		t.Fatalf("failing transaction returned %v, want error 1062", err)
	}
	var rows []item
	if err := e.tbl().Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Qty != 10 || rows[1].Name != "b" {
		t.Fatalf("rows = %+v, want a(10) and b only", rows)
	}
	if err := e.tbl().Create(&item{ID: 3, Name: "c", Qty: 3}).Error; err != nil {
		t.Fatalf("pool unusable after rollback: %v", err)
	}
	adaptertest.NoFatalErrors(t, e.c)
	if got := e.log.lbdErrors(); len(got) != 0 {
		t.Errorf("plugin logged %q for a non-fatal error", got)
	}
}

// A fatal error inside a transaction rolls it back and its
// connection is not used again.
func TestFatalErrorInTransactionRetiresConnection(t *testing.T) {
	eachBalance(t, fatalErrorInTransactionRetiresConnection)
}

func fatalErrorInTransactionRetiresConnection(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{RetryReads: true}, quiet()...)
	at := e.onlyConn(t)
	p := e.cl.Proxy(at)
	before, closed := e.node(t, at), closedConns(e.c, p)
	err := e.db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Table(e.table).Create(&item{ID: 1, Name: "a", Qty: 1}).Error; err != nil {
			return err
		}
		p.FailNext(1, errInitializing)
		var got item
		return tx.Table(e.table).Where("id = ?", 1).First(&got).Error // a read, but inside a transaction
	})
	if mysqlNumber(err) != 8001 {
		t.Fatalf("transaction returned %v, want error 8001 (no retry inside a transaction)", err)
	}
	after := e.node(t, at)
	if after.Retired != before.Retired+1 || after.FatalErrors != before.FatalErrors+1 {
		t.Fatalf("retired %d→%d, fatal %d→%d; want both +1", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	waitForClose(t, e.c, p, closed)
	if n := e.count(t); n != 0 {
		t.Fatalf("%d rows after the rollback, want 0", n)
	}
	if got := e.log.lbdErrors(); len(got) != 1 {
		t.Fatalf("plugin logged %q, want one line", got)
	}
}

// A non-fatal error fails its statement only; the connection is reused.
func TestNonFatalErrorKeepsConnection(t *testing.T) {
	eachBalance(t, nonFatalErrorKeepsConnection)
}

func nonFatalErrorKeepsConnection(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{RetryReads: true}, quiet()...)
	at := e.onlyConn(t)
	p := e.cl.Proxy(at)
	before, dials := e.node(t, at), p.TotalConns()
	p.FailNext(1, errNoTable)
	var got item
	if err := e.tbl().First(&got).Error; mysqlNumber(err) != 1146 {
		t.Fatalf("first returned %v, want error 1146 (not retried: not fatal)", err)
	}
	if n := e.count(t); n != 0 {
		t.Fatalf("count = %d", n)
	}
	after := e.node(t, at)
	if after.Retired != before.Retired || after.FatalErrors != before.FatalErrors {
		t.Fatalf("retired %d→%d, fatal %d→%d; want unchanged", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	if p.OpenConns() != 1 || p.TotalConns() != dials {
		t.Fatalf("proxy has %d open connections after %d dials (was 1 after %d): the connection was not reused",
			p.OpenConns(), p.TotalConns(), dials)
	}
	if got := e.log.lbdErrors(); len(got) != 0 {
		t.Errorf("plugin logged %q for a non-fatal error", got)
	}
}

// A fatal error (8001) once: one error for the application, the connection is
// retired and closed, the next statement succeeds.
func TestFatalErrorOnceRetiresConnection(t *testing.T) {
	eachBalance(t, fatalErrorOnceRetiresConnection)
}

func fatalErrorOnceRetiresConnection(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{}, quiet()...)
	at := e.onlyConn(t)
	p := e.cl.Proxy(at)
	before, closed := e.node(t, at), closedConns(e.c, p)
	p.FailNext(1, errInitializing)
	var got item
	errs := 0
	if err := e.tbl().First(&got).Error; err != nil {
		errs++
		if mysqlNumber(err) != 8001 {
			t.Fatalf("first returned %v, want error 8001", err)
		}
	}
	waitForClose(t, e.c, p, closed)
	if err := e.tbl().Create(&item{Name: "a", Qty: 1}).Error; err != nil {
		errs++
	}
	if n := e.count(t); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
	if errs != 1 {
		t.Fatalf("%d application-visible errors, want 1", errs)
	}
	after := e.node(t, at)
	if after.Retired != before.Retired+1 || after.FatalErrors != before.FatalErrors+1 {
		t.Fatalf("retired %d→%d, fatal %d→%d; want both +1", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	if after.State != lbd.StateUp {
		t.Fatalf("proxy state %v after one fatal error, want up", after.State)
	}
	logs := e.log.lbdErrors()
	if len(logs) != 1 || !containsAll(logs[0], "fatal error", "reason oceanbase-8000-8999", "8001") {
		t.Fatalf("plugin logged %q, want one line naming the reason", logs)
	}
}

// A proxy answering 8001 to everything goes down after at most the threshold of
// application errors, the others carry the traffic, and it comes back once healed.
func TestFailingProxyGoesDownAndRecovers(t *testing.T) {
	eachBalance(t, failingProxyGoesDownAndRecovers)
}

func failingProxyGoesDownAndRecovers(t *testing.T, balance string) {
	e := setup(t, balance, gormplugin.Plugin{}, fast()...)
	e.sqlDB.SetMaxIdleConns(0) // every statement is a fresh pick, so the bad proxy gets traffic
	bad := e.cl.Proxy(1)
	good0, good2 := e.cl.Proxy(0).Statements(), e.cl.Proxy(2).Statements()
	bad.FailNext(-1, errInitializing)
	errs := 0
	for i := range 200 {
		var n int64
		if err := e.tbl().Where("qty >= ?", i).Count(&n).Error; err != nil {
			if mysqlNumber(err) != 8001 {
				t.Fatalf("statement %d: %v", i, err)
			}
			errs++
		}
	}
	if errs > lbd.DefaultFatalErrorThreshold {
		t.Fatalf("%d application-visible errors, want at most %d", errs, lbd.DefaultFatalErrorThreshold)
	}
	waitFor(t, 5*time.Second, "the failing proxy to go down", func() bool { return e.node(t, 1).State == lbd.StateDown })
	if e.cl.Proxy(0).Statements() == good0 || e.cl.Proxy(2).Statements() == good2 {
		t.Fatal("the healthy proxies did not carry the traffic")
	}
	bad.FailNext(0, nil)
	waitFor(t, 5*time.Second, "the healed proxy to come back up", func() bool { return e.node(t, 1).State == lbd.StateUp })
	bad.ResetCounters()
	waitFor(t, 5*time.Second, "the healed proxy to serve the application again", func() bool {
		e.count(t)
		return servedTable(bad.Queries(), e.table)
	})
	if len(e.log.lbdErrors()) != errs {
		t.Fatalf("plugin logged %d lines for %d fatal errors", len(e.log.lbdErrors()), errs)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// servedTable reports whether one of a proxy's recorded statements used table (rather than
// being a probe).
func servedTable(queries []string, table string) bool {
	for _, q := range queries {
		if strings.Contains(q, table) {
			return true
		}
	}
	return false
}
