package routing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// switchoverRun is one write workload across a switchover: what was acknowledged, what failed,
// and how long the statements took that the switch caught.
type switchoverRun struct {
	mu        sync.Mutex
	acked     []int64         // ids of acknowledged autocommit inserts
	unknown   []int64         // ids of inserts cut by the end of the test: outcome unknown
	autoErrs  []error         // errors of autocommit inserts
	txErrs    []error         // errors of transactions
	slow      []time.Duration // latencies of statements that started before the switch ended and finished after it started
	statement atomic.Int64
}

// startWrites runs workers goroutines of autocommit inserts into table and, every fifth
// operation, a short transaction of two inserts into the worker's own table (the in-memory
// backend writes a committed transaction's tables back whole, so transactions of different
// workers must not share one). switchAt and switchEnd bracket the switchover for the latency
// record. It returns a stop function that waits for the workers.
func startWrites(t *testing.T, db *sql.DB, table string, workers int, run *switchoverRun, switchAt, switchEnd *atomic.Int64) func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range workers {
		if _, err := db.Exec(fmt.Sprintf("CREATE TABLE %s_tx%d (id BIGINT PRIMARY KEY)", table, w)); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int64(0); ctx.Err() == nil; seq++ {
				id := int64(w)*1_000_000 + seq
				start := time.Now()
				var err error
				isTx := seq%5 == 4
				if isTx {
					err = shortTx(ctx, db, fmt.Sprintf("%s_tx%d", table, w), id)
				} else {
					_, err = db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?)", id, w)
				}
				took := time.Since(start)
				if ctx.Err() != nil && err != nil {
					if !isTx {
						run.mu.Lock()
						run.unknown = append(run.unknown, id)
						run.mu.Unlock()
					}
					return // the test is ending; the statement was cut by it
				}
				run.statement.Add(1)
				run.mu.Lock()
				switch {
				case err == nil && !isTx:
					run.acked = append(run.acked, id)
				case err == nil:
				case isTx:
					run.txErrs = append(run.txErrs, err)
				default:
					run.autoErrs = append(run.autoErrs, err)
				}
				if a, e := switchAt.Load(), switchEnd.Load(); a != 0 && start.UnixNano() < max(e, a) && start.Add(took).UnixNano() > a {
					run.slow = append(run.slow, took)
				}
				run.mu.Unlock()
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// shortTx inserts id and id+500000 into table in one transaction.
func shortTx(ctx context.Context, db *sql.DB, table string, id int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for _, v := range []int64{id, id + 500_000} {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?)", v); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// waitStatements waits until the workload has run n more statements.
func (r *switchoverRun) waitStatements(t *testing.T, n int64) {
	t.Helper()
	target := r.statement.Load() + n
	testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("%d more statements", n), func() bool { return r.statement.Load() >= target })
}

// roleCluster is an lbdtest cluster of two groups, the first primary and the second standby,
// and a Connector that checks roles the OceanBase way and writes to the primary only.
func roleCluster(t *testing.T, failover time.Duration) (*lbdtest.Cluster, []*lbdtest.Proxy, []*lbdtest.Proxy, *sql.DB, *lbd.Connector) {
	t.Helper()
	cl := lbdtest.NewCluster(t, 4)
	a, b := cl.Proxies()[:2], cl.Proxies()[2:]
	for _, p := range b {
		p.SetRole(lbdtest.Standby)
	}
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, fmt.Sprintf("roleCheck=oceanbase&target=primary&failoverTimeoutMillis=%d", failover.Milliseconds()),
		clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs)...)
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	clusterkit.WaitForRoles(t, c, cl, func(i int) nodes.Role {
		if i < 2 {
			return nodes.RolePrimary
		}
		return nodes.RoleStandby
	})
	return cl, a, b, db, c
}

// percentile returns the p-th percentile (0-100) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

// checkAcked verifies that every acknowledged autocommit insert is in table exactly once and
// that nothing else is, but for inserts whose outcome is unknown.
func checkAcked(t *testing.T, db *sql.DB, table string, acked, unknown []int64) {
	t.Helper()
	rows, err := db.Query("SELECT id FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[int64]int{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		seen[id]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged insert %d is there %d times", id, seen[id])
		}
		delete(seen, id)
	}
	for _, id := range unknown {
		delete(seen, id)
	}
	if len(seen) != 0 {
		t.Errorf("%d rows nobody acknowledged", len(seen))
	}
}

func switchoverTest(t *testing.T, gap, failover time.Duration) *switchoverRun {
	_, a, b, db, c := roleCluster(t, failover)
	table := fmt.Sprintf("lbd_switch_%d_%d", os.Getpid(), time.Now().UnixNano()%1_000_000)
	if _, err := db.Exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, worker INT)"); err != nil {
		t.Fatal(err)
	}
	run := &switchoverRun{}
	var switchAt, switchEnd atomic.Int64
	stop := startWrites(t, db, table, 16, run, &switchAt, &switchEnd)
	defer stop()
	run.waitStatements(t, 200)
	switchAt.Store(time.Now().UnixNano())
	lbdtest.Switchover(a, b, gap)
	switchEnd.Store(time.Now().UnixNano())
	run.waitStatements(t, 300)
	stop()
	for _, p := range a {
		if p.Refused() == 0 {
			t.Logf("old primary %s refused no write (the switch caught none of its statements)", p.Addr())
		}
	}
	st := c.Stats()
	for i, p := range append(slices.Clone(a), b...) {
		ns, _ := st.Node(p.Addr())
		if want := map[bool]nodes.Role{true: nodes.RoleStandby, false: nodes.RolePrimary}[i < 2]; ns.Role != want {
			t.Errorf("%s is %v after the switchover, want %v", p.Addr(), ns.Role, want)
		}
	}
	checkAcked(t, db, table, run.acked, run.unknown)
	t.Logf("gap %v, failover timeout %v: %d statements; %d autocommit errors, %d transaction errors; caught by the switch: %d, p50 %v, p99 %v, max %v",
		gap, failover, run.statement.Load(), len(run.autoErrs), len(run.txErrs), len(run.slow),
		percentile(run.slow, 50).Round(time.Millisecond), percentile(run.slow, 99).Round(time.Millisecond), percentile(run.slow, 100).Round(time.Millisecond))
	return run
}

// A switchover under a 16-worker write load: autocommit inserts see no error at all, only
// transactions open across the switch fail, with ErrPrimaryChanged, and every acknowledged insert
// is there exactly once.
func TestSwitchoverUnderWriteLoad(t *testing.T) {
	testkit.SkipUnlessLong(t)
	for _, gap := range []time.Duration{0, 2 * time.Second} {
		t.Run(fmt.Sprintf("gap=%v", gap), func(t *testing.T) {
			run := switchoverTest(t, gap, 5*time.Second)
			if len(run.autoErrs) != 0 {
				t.Errorf("%d autocommit inserts failed, want none; first: %v", len(run.autoErrs), run.autoErrs[0])
			}
			for _, err := range run.txErrs {
				if !errors.Is(err, lbd.ErrPrimaryChanged) {
					t.Errorf("a transaction failed with %v, want ErrPrimaryChanged", err)
					break
				}
			}
		})
	}
}

// With a failover timeout shorter than the gap, statements caught by the gap fail with a clear
// error naming the target; none is lost silently.
func TestSwitchoverGapLongerThanFailoverTimeout(t *testing.T) {
	t.Parallel()
	run := switchoverTest(t, 2*time.Second, 500*time.Millisecond)
	if len(run.autoErrs) == 0 {
		t.Fatal("no autocommit insert failed during a 2 s gap with a 500 ms failover timeout")
	}
	var ce *lbd.ConnectError
	for _, err := range run.autoErrs {
		if !errors.As(err, &ce) || !ce.NoTarget || ce.Target != lbd.TargetPrimary {
			t.Fatalf("an insert failed with %v, want a ConnectError saying no node serves target=primary", err)
		}
	}
}
