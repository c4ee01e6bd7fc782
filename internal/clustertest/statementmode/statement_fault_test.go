package statementmode

import (
	"github.com/lbd-go/lbd"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// faultTable creates a fresh table (id INT PRIMARY KEY) and returns its name. It is dropped at
// the end of the test straight on the backend (the MariaDB database is shared, and the test
// may have closed db or stopped every proxy by then).
func faultTable(t *testing.T, cl *lbdtest.Cluster, db *sql.DB) string {
	t.Helper()
	tbl := fmt.Sprintf("sf_%d", rand.Uint32())
	if _, err := db.Exec("CREATE TABLE " + tbl + " (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	clusterkit.DropOnBackend(t, cl, tbl)
	return tbl
}

// inUseTotal returns the sum of every node's in-use count.
func inUseTotal(c *lbd.Connector) int {
	total := 0
	for _, ns := range c.Stats().Nodes {
		total += ns.InUse
	}
	return total
}

// db.Close does not close connections in use; a *sql.Conn still held runs its next statement
// into a closed Connector. borrow charges the in-use count of its first pick before tryNodes
// refuses with ErrClosed, and nothing gives it back: the node reports a physical connection in
// use forever.
func TestStatementModeInUseAfterClose(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 1)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	ctx := context.Background()
	cn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	db.Close()
	if _, err := cn.ExecContext(ctx, "SELECT 1"); !errors.Is(err, lbd.ErrClosed) {
		t.Fatalf("statement after Close: %v, want ErrClosed", err)
	}
	if n := inUseTotal(c); n != 0 {
		t.Errorf("after a statement refused with ErrClosed, nodes count %d physical connections in use; want 0", n)
	}
}

// checkIdleInvariants polls until the statement-mode accounting is consistent with everything idle:
// no physical connection in use (and every open one idle), Logical equal to database/sql's open count, no more physical
// connections than the trim target, and each proxy's own count equal to lbd's (plus at most
// the probe connection).
func checkIdleInvariants(t *testing.T, db *sql.DB, c *lbd.Connector, cl *lbdtest.Cluster, probes bool) {
	t.Helper()
	var last string
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := c.Stats()
		var problems []string
		ups := 0
		for _, ns := range st.Nodes {
			if ns.State == lbd.StateUp && !ns.Standby {
				ups++
			}
			if ns.InUse != 0 || ns.Idle != ns.Open {
				problems = append(problems, fmt.Sprintf("node %s open %d, idle %d, in use %d", ns.Addr, ns.Open, ns.Idle, ns.InUse))
			}
		}
		if open := db.Stats().OpenConnections; st.Logical != open {
			problems = append(problems, fmt.Sprintf("Logical=%d, database/sql open=%d", st.Logical, open))
		}
		target := 0
		if st.Logical > 0 {
			target = st.Logical + max(ups-1, 0)
		}
		if st.Open() > target {
			problems = append(problems, fmt.Sprintf("physical open %d > target %d (logical %d, %d up)", st.Open(), target, st.Logical, ups))
		}
		for _, px := range cl.Proxies() {
			ns, ok := st.Node(px.Addr())
			diff := px.OpenConns() - ns.Open
			if !ok {
				diff = px.OpenConns()
			}
			if diff < 0 || diff > 1 || (!probes && diff != 0) {
				problems = append(problems, fmt.Sprintf("proxy %s has %d connections, lbd counts %d", px.Addr(), px.OpenConns(), ns.Open))
			}
		}
		if len(problems) == 0 {
			return
		}
		last = strings.Join(problems, "; ")
		if time.Now().After(deadline) {
			t.Errorf("accounting did not settle once idle: %s", last)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isSuspicious reports errors that mean two users shared one physical connection or a wrong
// statement reached the server, never a fault the test injected.
func isSuspicious(err error) bool {
	s := err.Error()
	for _, bad := range []string{"busy buffer", "out of sync", "arguments, got", "converting argument", "panic", "unexpected statement type"} {
		if strings.Contains(s, bad) {
			return true
		}
	}
	return false
}

// TestStatementModeChaosAccounting mixes every kind of use of statement mode with every fault lbdtest can
// inject, then checks the accounting once everything is idle, and that Close leaves no
// connection open on any proxy. The chaos ends once every kind of fault has been injected twice and
// 2000 operations have run (about two seconds); set LBD_TEST_SOAK=5m to keep it going
// longer.
func TestStatementModeChaosAccounting(t *testing.T) {
	testkit.SkipUnlessLong(t)
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "balance=statement&timeout=300ms&recoverCheckCount=1",
		clusterkit.Fast(150*time.Millisecond, 300*time.Millisecond, 200*time.Millisecond, logs)...)
	db.SetMaxOpenConns(24)
	db.SetMaxIdleConns(12)
	tbl := faultTable(t, cl, db)
	var ids atomic.Int64

	var stmtMu sync.Mutex
	prepare := func() *sql.Stmt {
		st, err := db.Prepare("SELECT COUNT(*) FROM " + tbl + " WHERE id > ?")
		if err != nil {
			return nil
		}
		return st
	}
	shared := prepare()
	if shared == nil {
		t.Fatal("prepare failed")
	}

	var errMu sync.Mutex
	errCount := map[string]int{}
	var suspicious []error
	noteOp := func(op int, err error) {
		if err == nil {
			return
		}
		errMu.Lock()
		defer errMu.Unlock()
		k := err.Error()
		if len(k) > 60 {
			k = k[:60]
		}
		k = fmt.Sprintf("op %d: %s", op, k)
		errCount[k]++
		if isSuspicious(err) {
			suspicious = append(suspicious, err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops atomic.Int64
	worker := func(seed uint64) {
		r := rand.New(rand.NewPCG(seed, 7))
		for {
			select {
			case <-stop:
				return
			default:
			}
			ops.Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(200+r.IntN(800))*time.Millisecond)
			op := r.IntN(11)
			note := func(err error) { noteOp(op, err) }
			switch op {
			case 0: // rows left open for a while
				rows, err := db.QueryContext(ctx, "SELECT id FROM "+tbl+" LIMIT 5")
				note(err)
				if err == nil {
					time.Sleep(time.Duration(r.IntN(10)) * time.Millisecond) // the pause is the use under test
					for rows.Next() {
					}
					note(rows.Err())
					rows.Close()
				}
			case 1: // parameterized write (ErrSkip: prepare, execute, close)
				_, err := db.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (?)", ids.Add(1))
				note(err)
			case 2: // BeginTx, commit or roll back
				tx, err := db.BeginTx(ctx, nil)
				note(err)
				if err == nil {
					_, err = tx.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (?)", ids.Add(1))
					note(err)
					if r.IntN(2) == 0 {
						note(tx.Commit())
					} else {
						note(tx.Rollback())
					}
				}
			case 3: // SQL-text transaction on a *sql.Conn
				cn, err := db.Conn(ctx)
				note(err)
				if err == nil {
					if _, err = cn.ExecContext(ctx, "BEGIN"); err == nil {
						_, err = cn.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", tbl, ids.Add(1)))
						note(err)
						_, err = cn.ExecContext(ctx, "COMMIT")
					}
					note(err)
					cn.Close()
				}
			case 4: // session state on a *sql.Conn
				cn, err := db.Conn(ctx)
				note(err)
				if err == nil {
					_, err = cn.ExecContext(ctx, "SET @sf_chaos = 1")
					note(err)
					var v sql.NullInt64
					note(cn.QueryRowContext(ctx, "SELECT @sf_chaos").Scan(&v))
					cn.Close()
				}
			case 5: // long-lived prepared statement from many goroutines
				stmtMu.Lock()
				st := shared
				stmtMu.Unlock()
				var n int
				err := st.QueryRowContext(ctx, 0).Scan(&n)
				if err != nil && !strings.Contains(err.Error(), "statement is closed") {
					note(err)
				}
			case 6: // close and re-prepare the shared statement
				if st := prepare(); st != nil {
					stmtMu.Lock()
					old := shared
					shared = st
					stmtMu.Unlock()
					old.Close()
				}
			case 7: // cancelled mid-statement
				cctx, ccancel := context.WithTimeout(ctx, time.Duration(r.IntN(3))*time.Millisecond)
				var n int
				_ = db.QueryRowContext(cctx, "SELECT COUNT(*) FROM "+tbl).Scan(&n)
				ccancel()
			case 8: // non-fatal error
				_, _ = db.ExecContext(ctx, "SELECT * FROM sf_no_such_table")
			case 9: // *sql.Conn with several statements and a prepared one
				cn, err := db.Conn(ctx)
				note(err)
				if err == nil {
					st, err := cn.PrepareContext(ctx, "SELECT id FROM "+tbl+" WHERE id = ?")
					note(err)
					if err == nil {
						var id int
						err = st.QueryRowContext(ctx, 1).Scan(&id)
						if !errors.Is(err, sql.ErrNoRows) {
							note(err)
						}
						st.Close()
					}
					cn.Close()
				}
			case 10:
				note(db.PingContext(ctx))
			}
			cancel()
		}
	}
	for i := range 16 {
		wg.Add(1)
		go func() { defer wg.Done(); worker(uint64(i) + uint64(time.Now().UnixNano())) }()
	}
	// The faults come in rounds: each round injects every kind once, in a random order, on
	// random proxies, so that a run of any length has seen each kind of fault.
	const faultKinds = 8
	var rounds atomic.Int64
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
		fatal := &mysql.MySQLError{Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}, Message: "Server is initializing"}
		nonFatal := &mysql.MySQLError{Number: 1146, Message: "Table doesn't exist"}
		var round []int
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+r.IntN(100)) * time.Millisecond):
			}
			if len(round) == 0 {
				round = r.Perm(faultKinds)
			}
			kind := round[0]
			round = round[1:]
			px := cl.Proxy(r.IntN(3))
			switch kind {
			case 0:
				px.FailNext(1+r.IntN(3), fatal)
			case 1:
				px.FailNext(1+r.IntN(3), nonFatal)
			case 2: // the sleeps here are the outage's length, part of the fault
				px.Hang()
				time.Sleep(time.Duration(100+r.IntN(300)) * time.Millisecond)
				px.Resume()
			case 3:
				px.Stop()
				time.Sleep(time.Duration(100+r.IntN(300)) * time.Millisecond)
				px.Start()
			case 4:
				px.SetLatency(time.Duration(r.IntN(5)) * time.Millisecond)
			case 5:
				db.SetMaxIdleConns(r.IntN(16))
			case 6:
				db.SetMaxOpenConns(4 + r.IntN(24))
			case 7:
				db.SetConnMaxLifetime(time.Duration(r.IntN(300)+1) * time.Millisecond)
			}
			if len(round) == 0 {
				rounds.Add(1)
			}
		}
	}()
	// The chaos lasts until every kind of fault has hit the workload twice and the workers have
	// run enough operations around it; LBD_TEST_SOAK keeps it going longer.
	testkit.WaitFor(t, 30*time.Second, "two rounds of every fault kind and 2000 operations", func() bool {
		return rounds.Load() >= 2 && ops.Load() >= 2000
	})
	testkit.SoakWait(t)
	close(stop)
	wg.Wait()
	<-chaosDone
	for _, px := range cl.Proxies() {
		px.Resume()
		px.Start()
		px.SetLatency(0)
		px.FailNext(0, nil)
	}
	db.SetConnMaxLifetime(0)
	db.SetMaxOpenConns(24)
	db.SetMaxIdleConns(12)
	var keys []string
	for k, n := range errCount {
		keys = append(keys, fmt.Sprintf("%5d %s", n, k))
	}
	sort.Strings(keys)
	t.Logf("%d operations; errors:\n%s", ops.Load(), strings.Join(keys, "\n"))
	for i, err := range suspicious {
		if i == 5 {
			break
		}
		t.Errorf("suspicious error: %v", err)
	}
	testkit.WaitFor(t, 10*time.Second, "every node up again", func() bool {
		for _, ns := range c.Stats().Nodes {
			if ns.State != lbd.StateUp {
				return false
			}
		}
		return true
	})
	// A clean workload must now run without error.
	w := clusterkit.StartWorkload(t, db, 8)
	w.Progress(t, 10*time.Second, 300)
	w.Check(t)
	checkIdleInvariants(t, db, c, cl, true)
	t.Logf("idle: logical %d, physical per node %v, proxies %v", c.Stats().Logical, clusterkit.OpenCounts(c, cl), clusterkit.ProxyCounts(cl))

	stmtMu.Lock()
	shared.Close()
	stmtMu.Unlock()
	db.Close()
	testkit.WaitFor(t, 5*time.Second, "every proxy to see 0 connections after Close", func() bool {
		for _, px := range cl.Proxies() {
			if px.OpenConns() != 0 {
				return false
			}
		}
		return true
	})
}

// SetNodes under a statement-mode workload with transactions and prepared statements: the
// removed proxy's physical connections all close and it leaves Stats, the added proxy gets
// statements, and no statement fails.
func TestStatementModeDrainAndAddUnderLoad(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Fast(100*time.Millisecond, 500*time.Millisecond, 200*time.Millisecond, logs)...)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	tbl := faultTable(t, cl, db)
	st, err := db.Prepare("SELECT COUNT(*) FROM " + tbl + " WHERE id > ?")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ok atomic.Int64
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				switch (g + i) % 4 {
				case 0:
					err = st.QueryRowContext(ctx, 0).Scan(new(int))
				case 1:
					var tx *sql.Tx
					if tx, err = db.BeginTx(ctx, nil); err == nil {
						if _, err = tx.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (?)", ids.Add(1)); err == nil {
							err = tx.Commit()
						} else {
							tx.Rollback()
						}
					}
				case 2:
					var rows *sql.Rows
					if rows, err = db.QueryContext(ctx, "SELECT id FROM "+tbl+" LIMIT 3"); err == nil {
						time.Sleep(time.Millisecond) // rows held open across the node-set change
						for rows.Next() {
						}
						err = rows.Err()
						rows.Close()
					}
				case 3:
					_, err = db.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (?)", ids.Add(1))
				}
				if err != nil {
					t.Errorf("statement failed: %v", err)
					return
				}
				ok.Add(1)
			}
		}()
	}
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer halt()
	testkit.WaitFor(t, 5*time.Second, "statements on every proxy", func() bool {
		for _, px := range cl.Proxies() {
			if px.Statements() < 50 {
				return false
			}
		}
		return true
	})
	removed := cl.Proxy(0)
	added, err := cl.AddProxy()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetNodes([]string{cl.Proxy(1).Addr(), cl.Proxy(2).Addr(), added.Addr()}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the removed proxy to drain (no connection left, gone from Stats)", func() bool {
		_, known := c.Stats().Node(removed.Addr())
		return !known && removed.OpenConns() == 0
	})
	added.ResetCounters()
	testkit.WaitFor(t, 5*time.Second, "the added proxy to get statements", func() bool { return added.Statements() >= 100 })
	from := ok.Load()
	testkit.WaitFor(t, 5*time.Second, "more statements after the change", func() bool { return ok.Load() >= from+200 })
	halt()
	checkIdleInvariants(t, db, c, cl, true)
}

// db.Close while goroutines are in the middle of statements, transactions, open rows and
// *sql.Conns: every proxy ends with no connection from lbd (goleak in TestMain checks the
// goroutines).
func TestStatementModeCloseWhileBusy(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, _ := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	tbl := faultTable(t, cl, db)
	for _, px := range cl.Proxies() {
		px.SetLatency(2 * time.Millisecond)
	}
	var wg sync.WaitGroup
	var started atomic.Int64
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := 0; ; i++ {
				started.Add(1)
				var err error
				switch (g + i) % 4 {
				case 0:
					var tx *sql.Tx
					if tx, err = db.BeginTx(ctx, nil); err == nil {
						tx.ExecContext(ctx, "INSERT INTO "+tbl+" (id) VALUES (?)", g*100000+i)
						time.Sleep(time.Millisecond) // a transaction open when Close comes
						err = tx.Commit()
					}
				case 1:
					var rows *sql.Rows
					if rows, err = db.QueryContext(ctx, "SELECT id FROM "+tbl+" LIMIT 3"); err == nil {
						time.Sleep(time.Millisecond) // rows open when Close comes
						for rows.Next() {
						}
						rows.Close()
					}
				case 2:
					var cn *sql.Conn
					if cn, err = db.Conn(ctx); err == nil {
						cn.ExecContext(ctx, "SET @sf_c = 1")
						_, err = cn.ExecContext(ctx, "SELECT 1")
						cn.Close()
					}
				case 3:
					_, err = db.ExecContext(ctx, "SELECT 1")
				}
				if err != nil && started.Load() > 200 {
					return // closed
				}
			}
		}()
	}
	testkit.WaitFor(t, 5*time.Second, "the goroutines to be busy", func() bool { return started.Load() > 400 })
	db.Close()
	wg.Wait()
	testkit.WaitFor(t, 5*time.Second, "every proxy to see 0 connections after Close", func() bool {
		for _, px := range cl.Proxies() {
			if px.OpenConns() != 0 {
				return false
			}
		}
		return true
	})
}

// A proxy hung in the middle of a transaction and a proxy stopped while rows are open on it:
// once they are back, statements run without error and the accounting comes back to idle with
// every proxy agreeing with lbd.
func TestStatementModeHungAndStoppedMidUse(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement&timeout=2s&recoverCheckCount=1",
		clusterkit.Fast(100*time.Millisecond, 100*time.Millisecond, time.Hour, &testkit.Logs{})...)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	tbl := faultTable(t, cl, db)
	ctx := context.Background()
	p0 := cl.Proxy(0)
	waitUp := func() {
		t.Helper()
		testkit.WaitFor(t, 5*time.Second, "proxy 0 up", func() bool { s, _ := clusterkit.NodeState(c, p0.Addr()); return s == lbd.StateUp })
	}
	// nodeOf returns the node whose physical connection cn's open transaction holds: the one
	// connection in use, as nothing else runs while the loop below holds one transaction.
	nodeOf := func(cn *sql.Conn) string {
		t.Helper()
		addr := ""
		for _, ns := range c.Stats().Nodes {
			switch {
			case ns.InUse == 1 && addr == "":
				addr = ns.Addr
			case ns.InUse != 0:
				t.Fatalf("more than one physical connection in use while one transaction is open: %+v", c.Stats().Nodes)
			}
		}
		if addr == "" {
			t.Fatalf("no physical connection in use while a transaction is open: %+v", c.Stats().Nodes)
		}
		return addr
	}

	// Hung mid-transaction: find a transaction on proxy 0.
	var tx *sql.Tx
	var txConn *sql.Conn
	for range 10 {
		cn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err = cn.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO "+tbl+" (id) VALUES (?)", 1); err != nil {
			t.Fatal(err)
		}
		if nodeOf(cn) == p0.Addr() {
			txConn = cn
			break
		}
		tx.Rollback()
		cn.Close()
	}
	if txConn == nil {
		t.Fatal("no transaction landed on proxy 0")
	}
	p0.Hang()
	sctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	_, err := tx.ExecContext(sctx, "INSERT INTO "+tbl+" (id) VALUES (2)")
	cancel()
	if err == nil {
		t.Fatal("statement on a hung proxy succeeded")
	}
	tx.Rollback()
	txConn.Close()
	p0.Resume()
	waitUp()

	// Stopped while rows are open on it.
	var rows *sql.Rows
	var rowsConn *sql.Conn
	for range 10 {
		cn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cn.QueryContext(ctx, "SELECT id FROM "+tbl)
		if err != nil {
			t.Fatal(err)
		}
		if nodeOf(cn) == p0.Addr() {
			rows, rowsConn = r, cn
			break
		}
		r.Close()
		cn.Close()
	}
	if rows == nil {
		t.Fatal("no rows landed on proxy 0")
	}
	p0.Stop()
	for rows.Next() {
	}
	rows.Close()
	rowsConn.Close()
	if err := p0.Start(); err != nil {
		t.Fatal(err)
	}
	waitUp()

	w := clusterkit.StartWorkload(t, db, 6)
	w.Progress(t, 5*time.Second, 300)
	w.Check(t)
	checkIdleInvariants(t, db, c, cl, true)
}

// A statement whose deadline passes while its physical connection is still being dialed to a
// hung proxy (not yet known to be hung): the dial is abandoned, its counts are given back, and
// the hung proxy is left with no connection lbd still counts once it answers again.
func TestStatementModeBindDeadlineWhileDialingAHungProxy(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement&timeout=5s", clusterkit.Quiet()...)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	ctx := context.Background()
	held := testkit.HoldConns(t, db, 4) // 2 physical connections in use on each proxy, none idle
	p0 := cl.Proxy(0)
	p0.Hang()
	var failed int
	for range 6 {
		dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		cn, err := db.Conn(dctx)
		if err == nil {
			err = cn.PingContext(dctx)
			if err == nil {
				// keep it, so that the next bind must dial again
				held = append(held, cn)
			} else {
				cn.Close()
			}
		}
		cancel()
		if err != nil {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no statement met the hung proxy; the test proved nothing")
	}
	for _, cn := range held {
		cn.Close()
	}
	p0.Resume()
	t.Logf("%d of 6 checkouts failed on the hung dial", failed)
	checkIdleInvariants(t, db, c, cl, true) // the deadline triggers a probe, whose connection the proxy counts
}
