package adaptertest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
)

// Adapter opens a library under test (GORM, sqlx, ...) over lbd for one scenario.
type Adapter interface {
	// Open starts an Env (NewEnv) in the given balance mode with cfg.Options, opens the
	// library's handle over its Connector, sets Env.DB and creates the table
	// (Env.CreateTable). Everything is released at test end.
	Open(t *testing.T, balance string, cfg Config) (*Env, Lib)
}

// Config is what a scenario asks of the library's setup.
type Config struct {
	Options []lbd.Option // the Connector's options
	// RetryReads turns on the library's own retry of a read that failed with a fatal error,
	// where it has one (GORM's plugin does; sqlx has none). The scenarios that set it check
	// that errors which must not be retried are not.
	RetryReads bool
}

// Lib is what a scenario does through the library's own calls, on the Env's table (see Item).
// Every method returns the library's error unchanged.
type Lib interface {
	Insert(it Item) error                    // one row; ID 0 leaves the id to AUTO_INCREMENT
	ByName(name string) (Item, error)        // the row named name
	ByNames(names ...string) ([]Item, error) // the rows named in names (name IN (...)), by id
	QtyAtLeast(qty int) ([]Item, error)      // the rows with qty >= qty, by id
	All() ([]Item, error)                    // every row, by id
	First() (Item, error)                    // the row with the lowest id
	AddQty(atLeast, add int) (int64, error)  // qty += add where qty >= atLeast; rows affected
	DeleteBelow(qty int) (int64, error)      // deletes the rows with qty < qty; rows affected
	Count() (int64, error)                   // the number of rows
	CountQtyAtLeast(qty int) (int64, error)  // the number of rows with qty >= qty
	// Transaction runs body in one transaction: it commits if body returns nil, and otherwise
	// rolls back and returns body's error unchanged (or, if the rollback fails, an error that
	// says so and is not body's).
	Transaction(body func(tx Tx) error) error
	// Logged returns the lines the library's lbd integration has logged so far, and logs true;
	// logs is false for a library whose integration does not log (sqlx), and the scenarios then
	// skip their checks of the log.
	Logged() (lines []string, logs bool)
}

// Tx is what a scenario does inside a transaction, through the library's own calls.
type Tx interface {
	Insert(it Item) error           // as Lib.Insert
	SetQty(id int64, qty int) error // sets the qty of row id
	ByID(id int64) (Item, error)    // the row with this id
}

// RunScenarios runs every scenario through a, each as a subtest per balance mode: CRUD over
// every proxy, a transaction that commits and one that rolls back, a fatal error in a
// transaction, a non-fatal error, a fatal error once, and a failing proxy that goes down and
// recovers.
func RunScenarios(t *testing.T, a Adapter) {
	for _, s := range []struct {
		name string
		run  func(t *testing.T, a Adapter, balance string)
	}{
		{"CRUDOverEveryProxy", crudOverEveryProxy},
		{"TransactionCommitsAndRollsBack", transactionCommitsAndRollsBack},
		{"FatalErrorInTransactionRetiresConnection", fatalErrorInTransactionRetiresConnection},
		{"NonFatalErrorKeepsConnection", nonFatalErrorKeepsConnection},
		{"FatalErrorOnceRetiresConnection", fatalErrorOnceRetiresConnection},
		{"FailingProxyGoesDownAndRecovers", failingProxyGoesDownAndRecovers},
	} {
		t.Run(s.name, func(t *testing.T) {
			EachBalance(t, func(t *testing.T, balance string) { s.run(t, a, balance) })
		})
	}
}

// Create, read, update and delete, with the connections spread over every proxy.
func crudOverEveryProxy(t *testing.T, a Adapter, balance string) {
	e, lib := a.Open(t, balance, Config{Options: Quiet()})
	e.DB.SetMaxIdleConns(0) // every operation dials, so each one is a fresh pick
	for i := range 12 {
		if err := lib.Insert(Item{Name: fmt.Sprintf("item-%02d", i), Qty: i}); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if got, err := lib.ByName("item-07"); err != nil || got.Qty != 7 || got.ID == 0 {
		t.Fatalf("by name: %+v, %v", got, err)
	}
	if n, err := lib.AddQty(6, 100); err != nil || n != 6 {
		t.Fatalf("update: %d rows, %v", n, err)
	}
	if big, err := lib.QtyAtLeast(100); err != nil || len(big) != 6 || big[0].Qty != 106 {
		t.Fatalf("find after update: %+v, %v", big, err)
	}
	if some, err := lib.ByNames("item-06", "item-08", "item-11"); err != nil || len(some) != 3 || some[0].Qty != 106 || some[2].Qty != 111 {
		t.Fatalf("find by names: %+v, %v", some, err)
	}
	if n, err := lib.DeleteBelow(6); err != nil || n != 6 {
		t.Fatalf("delete: %d rows, %v", n, err)
	}
	if n := count(t, lib); n != 6 {
		t.Fatalf("count after delete = %d, want 6", n)
	}
	EveryProxyServed(t, e.Cluster)
	NoFatalErrors(t, e.Connector)
}

// A transaction commits; one failing midway (duplicate key) rolls back and the pool stays
// usable.
func transactionCommitsAndRollsBack(t *testing.T, a Adapter, balance string) {
	e, lib := a.Open(t, balance, Config{Options: Quiet()})
	err := lib.Transaction(func(tx Tx) error {
		if err := tx.Insert(Item{ID: 1, Name: "a", Qty: 1}); err != nil {
			return err
		}
		if err := tx.Insert(Item{ID: 2, Name: "b", Qty: 2}); err != nil {
			return err
		}
		return tx.SetQty(1, 10)
	})
	if err != nil {
		t.Fatalf("committed transaction: %v", err)
	}
	var dup error
	err = lib.Transaction(func(tx Tx) error {
		if err := tx.Insert(Item{ID: 3, Name: "c", Qty: 3}); err != nil {
			return err
		}
		dup = tx.Insert(Item{ID: 1, Name: "dup", Qty: 4})
		return dup
	})
	if testkit.MySQLNumber(dup) != 1062 {
		t.Fatalf("duplicate insert returned %v, want error 1062 (transaction: %v)", dup, err)
	}
	if !errors.Is(err, dup) {
		t.Fatalf("failing transaction returned %v, want the duplicate insert's error %v", err, dup)
	}
	rows, err := lib.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Qty != 10 || rows[1].Name != "b" {
		t.Fatalf("rows = %+v, want a(10) and b only", rows)
	}
	if err := lib.Insert(Item{ID: 3, Name: "c", Qty: 3}); err != nil {
		t.Fatalf("pool unusable after rollback: %v", err)
	}
	NoFatalErrors(t, e.Connector)
	nothingLogged(t, lib)
}

// A fatal error inside a transaction rolls it back and its connection is not used again.
func fatalErrorInTransactionRetiresConnection(t *testing.T, a Adapter, balance string) {
	e, lib := a.Open(t, balance, Config{Options: Quiet(), RetryReads: true})
	at := onlyConn(t, e, lib)
	p := e.Cluster.Proxy(at)
	before, closed := Node(t, e.Connector, e.Cluster, at), clusterkit.ClosedConns(e.Connector, p)
	var read error
	err := lib.Transaction(func(tx Tx) error {
		if err := tx.Insert(Item{ID: 1, Name: "a", Qty: 1}); err != nil {
			return err
		}
		p.FailNext(1, ErrInitializing)
		_, read = tx.ByID(1) // a read, but inside a transaction
		return read
	})
	if testkit.MySQLNumber(read) != 8001 {
		t.Fatalf("read in the transaction returned %v, want error 8001 (no retry inside a transaction; transaction: %v)", read, err)
	}
	if !errors.Is(err, read) {
		t.Fatalf("transaction returned %v, want the read's error %v", err, read)
	}
	after := Node(t, e.Connector, e.Cluster, at)
	if after.Retired != before.Retired+1 || after.FatalErrors != before.FatalErrors+1 {
		t.Fatalf("retired %d→%d, fatal %d→%d; want both +1", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	clusterkit.WaitForClose(t, e.Connector, p, closed)
	if n := count(t, lib); n != 0 {
		t.Fatalf("%d rows after the rollback, want 0", n)
	}
	if got, logs := lib.Logged(); logs && len(got) != 1 {
		t.Fatalf("integration logged %q, want one line", got)
	}
}

// A non-fatal error fails its statement only (even with reads retried, it is not: it is not
// fatal); the connection is reused.
func nonFatalErrorKeepsConnection(t *testing.T, a Adapter, balance string) {
	e, lib := a.Open(t, balance, Config{Options: Quiet(), RetryReads: true})
	at := onlyConn(t, e, lib)
	p := e.Cluster.Proxy(at)
	before, dials := Node(t, e.Connector, e.Cluster, at), p.TotalConns()
	p.FailNext(1, ErrNoTable)
	if _, err := lib.First(); testkit.MySQLNumber(err) != 1146 {
		t.Fatalf("first returned %v, want error 1146 (not retried: not fatal)", err)
	}
	p.FailNext(1, ErrNoTable)
	if _, err := lib.All(); testkit.MySQLNumber(err) != 1146 {
		t.Fatalf("all returned %v, want error 1146 (not retried: not fatal)", err)
	}
	if n := count(t, lib); n != 0 {
		t.Fatalf("count = %d", n)
	}
	after := Node(t, e.Connector, e.Cluster, at)
	if after.Retired != before.Retired || after.FatalErrors != before.FatalErrors {
		t.Fatalf("retired %d→%d, fatal %d→%d; want unchanged", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	if p.OpenConns() != 1 || p.TotalConns() != dials {
		t.Fatalf("proxy has %d open connections after %d dials (was 1 after %d): the connection was not reused",
			p.OpenConns(), p.TotalConns(), dials)
	}
	nothingLogged(t, lib)
}

// A fatal error (8001) once: one error for the application, the connection is retired and
// closed, the next statement succeeds. The Connector's read retries are off, so that the
// application sees the error.
func fatalErrorOnceRetiresConnection(t *testing.T, a Adapter, balance string) {
	e, lib := a.Open(t, balance, Config{Options: append(Quiet(), lbd.WithRetryReads(false))})
	at := onlyConn(t, e, lib)
	p := e.Cluster.Proxy(at)
	before, closed := Node(t, e.Connector, e.Cluster, at), clusterkit.ClosedConns(e.Connector, p)
	p.FailNext(1, ErrInitializing)
	errs := 0
	if _, err := lib.All(); err != nil {
		errs++
		if testkit.MySQLNumber(err) != 8001 {
			t.Fatalf("all returned %v, want error 8001", err)
		}
	}
	clusterkit.WaitForClose(t, e.Connector, p, closed)
	if err := lib.Insert(Item{Name: "a", Qty: 1}); err != nil {
		errs++
	}
	if n := count(t, lib); n != 1 {
		t.Fatalf("count = %d, want 1", n)
	}
	if errs != 1 {
		t.Fatalf("%d application-visible errors, want 1", errs)
	}
	after := Node(t, e.Connector, e.Cluster, at)
	if after.Retired != before.Retired+1 || after.FatalErrors != before.FatalErrors+1 {
		t.Fatalf("retired %d→%d, fatal %d→%d; want both +1", before.Retired, after.Retired, before.FatalErrors, after.FatalErrors)
	}
	if after.State != lbd.StateUp {
		t.Fatalf("proxy state %v after one fatal error, want up", after.State)
	}
	if logs, ok := lib.Logged(); ok && (len(logs) != 1 || !ContainsAll(logs[0], "fatal error", "reason oceanbase-8000-8999", "8001")) {
		t.Fatalf("integration logged %q, want one line naming the reason", logs)
	}
}

// A proxy answering 8001 to everything goes down after at most the threshold of application
// errors, the others carry the traffic, and it comes back once healed.
func failingProxyGoesDownAndRecovers(t *testing.T, a Adapter, balance string) {
	e, lib := a.Open(t, balance, Config{Options: Fast()})
	e.DB.SetMaxIdleConns(0) // every statement is a fresh pick, so the bad proxy gets traffic
	bad := e.Cluster.Proxy(1)
	good0, good2 := e.Cluster.Proxy(0).Statements(), e.Cluster.Proxy(2).Statements()
	bad.FailNext(-1, ErrInitializing)
	errs := 0
	for i := range 200 {
		if _, err := lib.CountQtyAtLeast(i); err != nil {
			if testkit.MySQLNumber(err) != 8001 {
				t.Fatalf("statement %d: %v", i, err)
			}
			errs++
		}
	}
	if errs > lbd.DefaultFatalErrorThreshold {
		t.Fatalf("%d application-visible errors, want at most %d", errs, lbd.DefaultFatalErrorThreshold)
	}
	state := func() lbd.NodeState { return Node(t, e.Connector, e.Cluster, 1).State }
	testkit.WaitFor(t, 5*time.Second, "the failing proxy to go down", func() bool { return state() == lbd.StateDown })
	if e.Cluster.Proxy(0).Statements() == good0 || e.Cluster.Proxy(2).Statements() == good2 {
		t.Fatal("the healthy proxies did not carry the traffic")
	}
	bad.FailNext(0, nil)
	testkit.WaitFor(t, 5*time.Second, "the healed proxy to come back up", func() bool { return state() == lbd.StateUp })
	bad.ResetCounters()
	testkit.WaitFor(t, 5*time.Second, "the healed proxy to serve the application again", func() bool {
		count(t, lib)
		return servedTable(bad.Queries(), e.Table)
	})
	if logs, ok := lib.Logged(); ok && len(logs) != errs {
		t.Fatalf("integration logged %d lines for %d fatal errors", len(logs), errs)
	}
}

// count returns the rows of the test's table.
func count(t *testing.T, lib Lib) int64 {
	t.Helper()
	n, err := lib.Count()
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	return n
}

// onlyConn limits the pool to one open connection, opened by a count through the library, and
// returns the index of its proxy.
func onlyConn(t *testing.T, e *Env, lib Lib) int {
	t.Helper()
	return OnlyConn(t, e.DB, e.Connector, e.Cluster, e.Balance, func() { count(t, lib) })
}

// nothingLogged fails t if the library's integration logged a line.
func nothingLogged(t *testing.T, lib Lib) {
	t.Helper()
	if got, logs := lib.Logged(); logs && len(got) != 0 {
		t.Errorf("integration logged %q for a non-fatal error", got)
	}
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
