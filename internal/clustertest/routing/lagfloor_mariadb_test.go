package routing

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/testkit"
)

// keepWriting inserts a row into table on the primary every 50 ms until the test ends, so that
// a delayed replica's delay shows as lag.
func keepWriting(t *testing.T, table string) {
	t.Helper()
	primary, _ := mariaDBPair(t)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(2_000_000); ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			primary.ExecContext(context.Background(), "INSERT INTO "+table+" VALUES (?)", i)
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// On the real pair with the only replica held 3 s behind (MASTER_DELAY) under a write load and
// maxReplicationLagSeconds=1: with the default floor the replica stays in the reads, shown
// lagging and kept by the floor; a read one second after its write (past the 300 ms window,
// within the replica's lag) goes to the primary and sees it; causal reads by GTID see theirs.
func TestLagFloorOnThePair(t *testing.T) {
	_, _, table := delayedPairTable(t, "lbd_floor", 3*time.Second)
	keepWriting(t, table)
	db, c := splitOverPairConnector(t, "maxReplicationLagSeconds=1")
	rAddr := mustAddr(t, os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN"))
	testkit.WaitFor(t, 15*time.Second, "the replica 2 s or more behind, kept by the floor", func() bool {
		ns, _ := c.Stats().Node(rAddr)
		return ns.Lagging && ns.LagFloor && ns.ReplicationLag >= 2*time.Second
	})
	ns, _ := c.Stats().Node(rAddr)
	reads := ns.Reads
	ctx := context.Background()
	for range 40 {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	ns, _ = c.Stats().Node(rAddr)
	t.Logf("replica lag %v, lagging %v, kept by the floor %v: %d of 40 reads ran on it", ns.ReplicationLag, ns.Lagging, ns.LagFloor, ns.Reads-reads)
	if ns.Reads == reads {
		t.Fatal("no read ran on the replica the floor keeps")
	}
	stale := 0
	for i := range 5 {
		id := time.Now().UnixNano() + int64(i)
		if _, err := db.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?)", id); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // past readAfterWriteMillis (300 ms), within the replica's lag
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			stale++
		}
	}
	if stale != 0 {
		t.Errorf("%d of 5 reads a second after their write missed it while the floor kept a replica 3 s behind", stale)
	}
	gdb, gc := splitOverPairConnector(t, "maxReplicationLagSeconds=1&readConsistency=gtid&readAfterWriteMillis=500")
	testkit.WaitFor(t, 15*time.Second, "the replica kept by the floor (gtid)", func() bool {
		ns, _ := gc.Stats().Node(rAddr)
		return ns.LagFloor
	})
	if stale := staleReads(t, gdb, table, 5); stale != 0 {
		t.Errorf("%d of 5 causal reads missed their write on a replica kept by the floor", stale)
	}
	t.Logf("causal reads: %+v", gc.Stats().Causal)
}
