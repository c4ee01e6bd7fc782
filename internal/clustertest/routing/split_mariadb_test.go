package routing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
)

// delayReplica makes the pair's replica apply every transaction delay after the primary
// committed it (MASTER_DELAY), until the test ends.
func delayReplica(t *testing.T, rAdmin *sql.DB, delay time.Duration) {
	t.Helper()
	set := func(d time.Duration) error {
		for _, q := range []string{"STOP SLAVE", fmt.Sprintf("CHANGE MASTER TO MASTER_DELAY = %d", int(d.Seconds())), "START SLAVE"} {
			if _, err := rAdmin.Exec(q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}
	if err := set(delay); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(0); err != nil {
			t.Error(err)
		}
	})
}

// pairTable creates a table named after prefix on the pair's primary, dropped when the test
// ends, and waits until the replica has it.
func pairTable(t *testing.T, primary, replica *sql.DB, prefix string) string {
	t.Helper()
	table := fmt.Sprintf("%s_%d", prefix, os.Getpid())
	if _, err := primary.Exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Exec("DROP TABLE IF EXISTS " + table) })
	testkit.WaitFor(t, 10*time.Second, "the table on the replica", func() bool {
		_, err := replica.Exec("SELECT 1 FROM " + table)
		return err == nil
	})
	return table
}

// delayedPairTable creates a table named after prefix on the pair's primary, waits for it on the
// replica, then holds the replica delay behind the primary until the test ends; it returns the
// primary, the replica's admin handle and the table.
func delayedPairTable(t *testing.T, prefix string, delay time.Duration) (primary, rAdmin *sql.DB, table string) {
	t.Helper()
	primary, replica := mariaDBPair(t)
	rAdmin = mariaDBAdmin(t, os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN"))
	table = pairTable(t, primary, replica, prefix)
	delayReplica(t, rAdmin, delay)
	return primary, rAdmin, table
}

// splitOverPair opens a Connector with the read/write split over the pair's primary and
// replica; see splitOverPairConnector.
func splitOverPair(t *testing.T, params string) *sql.DB {
	t.Helper()
	db, _ := splitOverPairConnector(t, params)
	return db
}

// staleReads writes a row and reads it back at once, tries times, and counts the reads that
// did not see their write.
func staleReads(t *testing.T, db *sql.DB, table string, tries int) int {
	t.Helper()
	ctx := context.Background()
	stale := 0
	for i := range tries {
		id := time.Now().UnixNano() + int64(i)
		if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			stale++
		}
	}
	return stale
}

// On the real pair with the replica 1 s behind: without read-your-writes a read right after its
// write sometimes misses it (it ran on the replica); with readAfterWriteMillis above the delay
// it never does.
func TestReadYourWritesOnADelayedReplica(t *testing.T) {
	_, _, table := delayedPairTable(t, "lbd_delay", time.Second)

	off := staleReads(t, splitOverPair(t, "readAfterWriteMillis=0"), table, 20)
	on := staleReads(t, splitOverPair(t, "readAfterWriteMillis=2000"), table, 20)
	t.Logf("stale reads out of 20 with the replica 1 s behind: %d without read-your-writes, %d with a 2 s window", off, on)
	if off == 0 {
		t.Error("no read missed its write without read-your-writes: the test cannot tell the window works")
	}
	if on != 0 {
		t.Errorf("%d reads missed their write inside the read-your-writes window", on)
	}
}

// splitOverPairConnector is splitOverPair that also returns the Connector.
func splitOverPairConnector(t *testing.T, params string) (*sql.DB, *lbd.Connector) {
	t.Helper()
	pair := clusterkit.MariaDBPair(t)
	pCfg, rCfg := pair.PrimaryCfg, pair.ReplicaCfg
	c, err := lbd.NewConnector(pair.SplitDSN("interpolateParams=true&"+params), clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, &testkit.Logs{})...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	testkit.WaitFor(t, 5*time.Second, "the role checks", func() bool {
		p, _ := c.Stats().Node(pCfg.Addr)
		r, _ := c.Stats().Node(rCfg.Addr)
		return p.Role == nodes.RolePrimary && r.Role == nodes.RoleReplica
	})
	return db, c
}

// With readConsistency=gtid and the replica 2 s behind, a read right after its write cannot run on
// the replica: lbd finds the replica behind with a check (it waits no delay out) and runs the
// read on the primary, where it sees its write; a read of a write the replica has applied runs
// there. With a bound shorter than the delay every read runs on the
// primary, and sees its write too. MASTER_DELAY counts from the event's timestamp, which has
// whole seconds, so a delay of 2 s holds a write back between 1 and 2 s: always longer than the
// 200 ms bound (a 1 s delay holds some writes back for only a few ms).
func TestCausalReadsByGTIDOnADelayedReplica(t *testing.T) {
	_, rAdmin, table := delayedPairTable(t, "lbd_gtidread", 2*time.Second)

	db, c := splitOverPairConnector(t, "readConsistency=gtid&readAfterWriteMillis=3000")
	if stale := staleReads(t, db, table, 5); stale != 0 {
		t.Errorf("%d of 5 reads missed their write with readConsistency=gtid", stale)
	}
	cs := c.Stats().Causal
	t.Logf("bound 3 s: %d captures (%d reported by the writes' answers), %d waits on the replica taking %v in all, %d fell back to the primary",
		cs.Captures, cs.Reported, cs.Waits, cs.WaitTime.Round(time.Millisecond), cs.Fallbacks)
	if cs.Captures != 5 || cs.Reported != 5 || cs.Waits == 0 || cs.Fallbacks != 5 || cs.WaitTime > time.Second {
		t.Errorf("causal stats %+v: want 5 positions reported by the writes, the replica checked without waiting the delay out, and 5 reads on the primary", cs)
	}
	// A write the replica has applied (after the delay): the read runs there.
	ctx := context.Background()
	id := time.Now().UnixNano()
	if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?)", id); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the write on the delayed replica", func() bool {
		var n int
		return rAdmin.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE id = ?", id).Scan(&n) == nil && n == 1
	})
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id = ?", id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("a read after the replica applied its write: %d rows, %v", n, err)
	}
	after := c.Stats().Causal
	if after.Fallbacks != cs.Fallbacks || after.Waits != cs.Waits+1 {
		t.Errorf("causal stats %+v after %+v: want the read of a write the replica applied on the replica, after one wait", after, cs)
	}

	db2, c2 := splitOverPairConnector(t, "readConsistency=gtid&readAfterWriteMillis=200")
	if stale := staleReads(t, db2, table, 5); stale != 0 {
		t.Errorf("%d of 5 reads missed their write with a bound below the delay", stale)
	}
	cs2 := c2.Stats().Causal
	t.Logf("bound 200 ms: %d waits, %d fell back to the primary", cs2.Waits, cs2.Fallbacks)
	if cs2.Fallbacks != 5 {
		t.Errorf("causal stats %+v: every read under a 200 ms bound on a 2 s delay should run on the primary", cs2)
	}
}

// With maxReplicationLagSeconds and no lag floor (minServingReplicas=0), a replica held 3 s
// behind under a write load is taken out of the reads (Stats says it lags), reads right after
// their write go to the primary and see it, and once the delay is lifted the replica takes
// reads again.
func TestLaggingReplicaIsLeftOutOfReads(t *testing.T) {
	primary, rAdmin, table := delayedPairTable(t, "lbd_lag", 3*time.Second)
	db, c := splitOverPairConnector(t, "readAfterWriteMillis=0&maxReplicationLagSeconds=1&minServingReplicas=0")
	rAddr := mustAddr(t, os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN"))
	ctx := context.Background()
	// Writes keep the replica's delay visible as lag.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1_000_000); ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			primary.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?)", i)
		}
	}()
	defer func() { close(stop); <-done }()
	testkit.WaitFor(t, 15*time.Second, "the replica to be left out for a lag of 2 s or more", func() bool {
		ns, _ := c.Stats().Node(rAddr)
		return ns.Lagging && ns.ReplicationLag >= 2*time.Second
	})
	if stale := staleReads(t, db, table, 10); stale != 0 {
		t.Errorf("%d of 10 reads right after their write missed it while the only replica lagged", stale)
	}
	ns, _ := c.Stats().Node(rAddr)
	t.Logf("replica lag %v, lagging %v", ns.ReplicationLag, ns.Lagging)
	for _, q := range []string{"STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 0", "START SLAVE"} {
		if _, err := rAdmin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "the replica to catch up and take reads again", func() bool {
		ns, _ := c.Stats().Node(rAddr)
		return !ns.Lagging
	})
}

// mustAddr returns the address of a go-sql-driver DSN.
func mustAddr(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Addr
}

// On the real pair, with an account that has neither SUPER nor READ ONLY ADMIN: a named lock
// held on the primary is seen as held through the split, every time (IS_FREE_LOCK and
// IS_USED_LOCK are answered by the primary, never by the replica, where the lock does not
// exist); and a write after session state set in a read-only transaction on the replica fails
// with lbd.ErrPinnedToReplica before it is sent, writing nothing anywhere.
func TestSplitRoutesByProofOnThePair(t *testing.T) {
	primary, replica := mariaDBPair(t)
	db, c := splitOverPairConnector(t, "readAfterWriteMillis=0")
	ctx := context.Background()
	holder, err := primary.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	lock := fmt.Sprintf("lbd_lock_%d", os.Getpid())
	var got sql.NullInt64
	if err := holder.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", lock).Scan(&got); err != nil || got.Int64 != 1 {
		t.Fatalf("GET_LOCK on the primary: %v, %v", got, err)
	}
	defer holder.ExecContext(ctx, "DO RELEASE_LOCK(?)", lock)
	for i := range 20 {
		var free int
		var used sql.NullInt64
		if err := db.QueryRowContext(ctx, "SELECT IS_FREE_LOCK(?)", lock).Scan(&free); err != nil || free != 0 {
			t.Fatalf("IS_FREE_LOCK %d: %d, %v; the lock is held on the primary", i, free, err)
		}
		if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", lock).Scan(&used); err != nil || !used.Valid {
			t.Fatalf("IS_USED_LOCK %d: %v, %v; the lock is held on the primary", i, used, err)
		}
	}

	table := pairTable(t, primary, replica, "lbd_proof")
	rAddr := mustAddr(t, os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN"))
	pinned := false
	for i := 0; i < 20 && !pinned; i++ {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "SET @lbd_x = 1"); err != nil {
			t.Fatal(err)
		}
		r, _ := c.Stats().Node(rAddr)
		pinned = r.InUse == 1
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if pinned {
			_, err := conn.ExecContext(ctx, "INSERT INTO "+table+" VALUES (1)")
			var me *mysql.MySQLError
			if !errors.Is(err, lbd.ErrPinnedToReplica) || errors.As(err, &me) {
				t.Errorf("a write after session state on the replica: %v; want lbd.ErrPinnedToReplica, not the server's refusal", err)
			}
		}
		conn.Close()
	}
	if !pinned {
		t.Fatal("no read-only transaction of 20 ran on the replica")
	}
	for name, h := range map[string]*sql.DB{"primary": primary, "replica": replica} {
		var n int
		if err := h.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s holds %d rows (%v); the refused write must write nothing", name, n, err)
		}
	}
}
