package routing

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

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// Two transactions that lock two rows in opposite orders on a real MariaDB (through lbdtest's
// relays): InnoDB picks one as the deadlock's victim and rolls it back whole with 1213; RunTx
// runs it again, and both transactions count once.
func TestRunTxRerunsARealDeadlockVictim(t *testing.T) {
	if !clusterkit.OnMariaDB() {
		t.Skip("needs a real server's deadlock detection: set " + lbdtest.EnvBackendDSN)
	}
	cl := lbdtest.NewCluster(t, 2)
	db, _ := clusterkit.OpenDB(t, cl, "", clusterkit.Quiet()...)
	table := fmt.Sprintf("lbd_runtx_deadlock_%d", os.Getpid())
	if _, err := db.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY, n INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + table) })
	if _, err := db.Exec("INSERT INTO " + table + " VALUES (1, 0), (2, 0)"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var causes sync.Map // attempt's error -> true
	policy := lbd.TxRetryPolicy{OnRerun: func(_ int, err error) { causes.Store(err.Error(), err) }}
	locked := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var runs [2]atomic.Int32
	// body w adds one to row w+1, then (on its first run, once the other body holds its row)
	// to the other row.
	body := func(w int) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			first := runs[w].Add(1) == 1
			if _, err := tx.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = ?", w+1); err != nil {
				return err
			}
			if first {
				close(locked[w])
				select {
				case <-locked[1-w]:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			_, err := tx.ExecContext(ctx, "UPDATE "+table+" SET n = n + 1 WHERE id = ?", 2-w)
			return err
		}
	}
	var errs [2]error
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = policy.RunTx(ctx, db, nil, body(w))
		}()
	}
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("transaction %d: %v", w, err)
		}
	}
	if total := runs[0].Load() + runs[1].Load(); total != 3 {
		t.Fatalf("the bodies ran %d and %d times; want one rerun in all", runs[0].Load(), runs[1].Load())
	}
	causes.Range(func(_, v any) bool {
		if me := (*mysql.MySQLError)(nil); !errors.As(v.(error), &me) || me.Number != 1213 {
			t.Errorf("a rerun after %v; want 1213", v)
		}
		return true
	})
	for id := 1; id <= 2; id++ {
		var n int
		if err := db.QueryRow("SELECT n FROM "+table+" WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("row %d counts %d; want 2, one for each transaction", id, n)
		}
	}
}

// txLoad is what a RunTx workload did: the ids of the transactions that committed, the ones
// whose outcome is unknown, the errors returned, and the reruns by cause.
type txLoad struct {
	mu        sync.Mutex
	committed []int64
	unknown   []int64
	errs      []error
	reruns    map[string]int
	rerunTook []time.Duration // how long the RunTx calls that ran a transaction again took
	done      atomic.Int64
}

// rerunCause names an error that let RunTx run a transaction again.
func rerunCause(err error) string {
	var me *mysql.MySQLError
	switch {
	case errors.Is(err, lbd.ErrPrimaryChanged):
		return "ErrPrimaryChanged"
	case errors.As(err, &me):
		return fmt.Sprintf("server error %d", me.Number)
	}
	return err.Error()
}

// waitDone waits until the workload has finished n more transactions.
func (l *txLoad) waitDone(t *testing.T, n int64) {
	t.Helper()
	target := l.done.Load() + n
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("%d more transactions", n), func() bool { return l.done.Load() >= target })
}

// A manual switchover of the real MariaDB pair under 16 workers that each run RunTx
// transactions inserting a row of their own and adding one to a shared counter: transactions
// caught by the switch run again on the new primary, and afterwards the new primary holds
// every committed transaction exactly once (one row each, and the counter equal to the rows),
// nothing of the failed ones, and the workers saw no error but what the attempt cap allows.
// With a gap of a second between the old primary's read_only and the new one's, the reruns'
// BeginTx waits for the new primary (failoverTimeoutMillis, 5 s) instead of failing.
func TestRunTxAcrossAManualSwitchoverOnMariaDB(t *testing.T) {
	for _, gap := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("gap %v", gap), func(t *testing.T) { runTxAcrossASwitchover(t, gap) })
	}
}

func runTxAcrossASwitchover(t *testing.T, gap time.Duration) {
	ps := openPairSwitch(t, "target=primary")
	table := fmt.Sprintf("lbd_runtx_%d_%d", os.Getpid(), gap.Milliseconds())
	counter := table + "_n"
	t.Cleanup(func() {
		for _, tbl := range []string{table, counter} {
			ps.pAdmin.Exec("DROP TABLE IF EXISTS " + tbl)
			ps.rAdmin.Exec("DROP TABLE IF EXISTS " + tbl)
		}
	})
	for _, q := range []string{
		"CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, worker INT NOT NULL)",
		"CREATE TABLE " + counter + " (id INT PRIMARY KEY, n BIGINT NOT NULL)",
		"INSERT INTO " + counter + " VALUES (1, 0)",
	} {
		if _, err := ps.db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}

	load := &txLoad{reruns: map[string]int{}}
	var stopping atomic.Bool
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int64(0); !stopping.Load(); seq++ {
				id := int64(w)*1_000_000 + seq
				// Each transaction has a context of its own that the test never cancels, so
				// that stopping the workload cuts no COMMIT.
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				reran := false
				policy := lbd.TxRetryPolicy{OnRerun: func(_ int, err error) {
					reran = true
					load.mu.Lock()
					load.reruns[rerunCause(err)]++
					load.mu.Unlock()
				}}
				start := time.Now()
				err := policy.RunTx(ctx, ps.db, nil, func(tx *sql.Tx) error {
					if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?, ?)", id, w); err != nil {
						return err
					}
					_, err := tx.ExecContext(ctx, "UPDATE "+counter+" SET n = n + 1 WHERE id = 1")
					return err
				})
				took := time.Since(start)
				cancel()
				load.mu.Lock()
				if reran {
					load.rerunTook = append(load.rerunTook, took)
				}
				switch {
				case err == nil:
					load.committed = append(load.committed, id)
				case errors.Is(err, lbd.ErrCommitUnknown):
					load.unknown = append(load.unknown, id)
					load.errs = append(load.errs, err)
				default:
					load.errs = append(load.errs, err)
				}
				load.mu.Unlock()
				load.done.Add(1)
			}
		}()
	}
	stop := func() { stopping.Store(true); wg.Wait() }
	defer stop()
	load.waitDone(t, 200)
	switchAt := time.Now()
	ps.switchover(t, gap)
	switchTook := time.Since(switchAt)
	load.waitDone(t, 300)
	stop()
	ps.waitRoles(t, nodes.RoleReplica, nodes.RolePrimary)

	// The cap: an error is acceptable only when every attempt failed with an error that
	// allows a rerun, or when COMMIT's outcome is unknown.
	for _, err := range load.errs {
		var txErr *lbd.TxError
		if !errors.Is(err, lbd.ErrCommitUnknown) && !(errors.As(err, &txErr) && txErr.Rerunnable && txErr.Attempts == txErr.MaxAttempts) {
			t.Errorf("a worker got %v; want no error but an exhausted cap or an unknown COMMIT", err)
		}
	}
	rerunCount := 0
	for _, n := range load.reruns {
		rerunCount += n
	}
	if rerunCount == 0 {
		t.Errorf("the switchover caught no transaction: nothing was run again, the test proved nothing")
	}

	// The new primary: every committed transaction once, nothing else (but an unknown
	// outcome), and the counter equal to the rows.
	checkAcked(t, ps.replica, table, load.committed, load.unknown)
	var rows, n int64
	if err := ps.replica.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if err := ps.replica.QueryRow("SELECT n FROM " + counter + " WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Errorf("the counter says %d transactions, the table holds %d rows", n, rows)
	}
	if len(load.unknown) == 0 && rows != int64(len(load.committed)) {
		t.Errorf("the table holds %d rows; %d transactions committed", rows, len(load.committed))
	}
	t.Logf("RunTx across a manual switchover (%v): %d transactions committed, %d reruns %v (calls that reran took p50 %v, max %v), %d errors returned (%d with COMMIT's outcome unknown); %d rows, counter %d",
		switchTook.Round(time.Millisecond), len(load.committed), rerunCount, load.reruns,
		percentile(load.rerunTook, 50).Round(time.Millisecond), percentile(load.rerunTook, 100).Round(time.Millisecond),
		len(load.errs), len(load.unknown), rows, n)
}
