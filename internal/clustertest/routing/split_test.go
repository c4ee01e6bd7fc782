package routing

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// splitCluster is an lbdtest cluster of one primary and three read-only replicas behind a
// Connector in statement mode with the read/write split, roles checked the MySQL way.
func splitCluster(t *testing.T, params string) (*lbdtest.Cluster, *lbd.Connector, *sql.DB, func(context.Context, string, ...any) error, func(context.Context, string, ...any) (int, error)) {
	t.Helper()
	cl := lbdtest.NewCluster(t, 4)
	for _, p := range cl.Proxies()[1:] {
		p.SetRole(lbdtest.Replica)
	}
	logs := &testkit.Logs{}
	db, c := clusterkit.OpenDB(t, cl, "balance=statement&readWriteSplit=true&roleCheck=mysql&interpolateParams=true&"+params,
		clusterkit.Fast(250*time.Millisecond, 250*time.Millisecond, time.Hour, logs)...)
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	clusterkit.WaitForRoles(t, c, cl, func(i int) nodes.Role {
		if i == 0 {
			return nodes.RolePrimary
		}
		return nodes.RoleReplica
	})
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	count := func(ctx context.Context, q string, args ...any) (int, error) {
		var n int
		err := db.QueryRowContext(ctx, q, args...).Scan(&n)
		return n, err
	}
	return cl, c, db, exec, count
}

// countQueries counts, per proxy of cl, the recorded statements that start with prefix.
func countQueries(cl *lbdtest.Cluster, prefix string) []int {
	out := make([]int, len(cl.Proxies()))
	for i, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			if strings.HasPrefix(q, prefix) {
				out[i]++
			}
		}
	}
	return out
}

// A 16-worker workload of 80 % reads: the reads spread evenly over the replicas (and the
// primary), and not one write reaches a replica.
func TestReadWriteSplitSpreadsReadsAndKeepsWritesOnThePrimary(t *testing.T) {
	testkit.SkipUnlessLong(t)
	// The counting rule alone (least-connections), as in TestConnectionsSpreadEvenly: under the
	// load policy a replica measured slower on a busy machine rightly takes fewer reads.
	cl, c, _, exec, count := splitCluster(t, "readAfterWriteMillis=0&balancePolicy=least-connections")
	table := fmt.Sprintf("lbd_split_%d", os.Getpid())
	ctx := context.Background()
	if err := exec(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec(ctx, "DROP TABLE IF EXISTS "+table) })
	const workers, perWorker = 16, 500 // 8 000 statements: every proxy's query log keeps them all
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				var err error
				if i%5 == 4 {
					err = exec(ctx, "INSERT INTO "+table+" VALUES (?)", w*perWorker+i)
				} else {
					_, err = count(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id < ?", i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a statement failed: %v", err)
	}
	reads := countQueries(cl, "SELECT COUNT(*) FROM "+table)
	writes := countQueries(cl, "INSERT INTO "+table)
	for i, p := range cl.Proxies()[1:] {
		if writes[i+1] != 0 || p.Refused() != 0 {
			t.Errorf("replica %s saw %d writes (%d refused)", p.Addr(), writes[i+1], p.Refused())
		}
	}
	if writes[0] != workers*perWorker/5 {
		t.Errorf("the primary saw %d writes, want %d", writes[0], workers*perWorker/5)
	}
	total := 0
	for _, r := range reads {
		total += r
	}
	if total != workers*perWorker*4/5 {
		t.Errorf("%d reads counted at the proxies, want %d", total, workers*perWorker*4/5)
	}
	replicaReads := make([]int64, 0, len(reads)-1)
	for _, r := range reads[1:] {
		replicaReads = append(replicaReads, int64(r))
	}
	replicaCV := clusterkit.ShareCV(replicaReads)
	t.Logf("reads per proxy (primary first) %v, CV over the replicas %.1f %%; writes %v", reads, 100*replicaCV, writes)
	if replicaCV > 0.05 {
		t.Errorf("reads over the replicas %v: CV %.1f %%, want at most 5 %%", reads[1:], 100*replicaCV)
	}
	st := c.Stats()
	var statsReads, statsWrites uint64
	for i, p := range cl.Proxies() {
		ns, _ := st.Node(p.Addr())
		statsReads, statsWrites = statsReads+ns.Reads, statsWrites+ns.Writes
		if i > 0 && ns.Writes != 0 {
			t.Errorf("Stats counts %d writes on replica %s", ns.Writes, p.Addr())
		}
	}
	// Stats also counts the CREATE TABLE and what database/sql sends around the statements.
	if statsReads < uint64(total) || statsWrites < uint64(writes[0]) {
		t.Errorf("Stats counts %d reads and %d writes, want at least the %d and %d the proxies saw", statsReads, statsWrites, total, writes[0])
	}
}

// lbd.OnPrimary sends even a read to the primary, without starting a read-your-writes window.
func TestOnPrimarySendsReadsToThePrimary(t *testing.T) {
	t.Parallel()
	cl, c, _, exec, count := splitCluster(t, "readAfterWriteMillis=60000")
	table := fmt.Sprintf("lbd_onprimary_%d", os.Getpid())
	ctx := context.Background()
	if err := exec(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec(ctx, "DROP TABLE IF EXISTS "+table) })
	scope := lbd.ReadYourWrites(ctx) // no write in it: its reads may go anywhere
	for i := range 20 {
		if _, err := count(lbd.OnPrimary(scope), fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id > %d /* forced */", table, i)); err != nil {
			t.Fatal(err)
		}
		if _, err := count(scope, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id > %d /* free */", table, i)); err != nil {
			t.Fatal(err)
		}
	}
	forced, free := make([]int, 4), make([]int, 4)
	for i, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			switch {
			case strings.HasSuffix(q, "/* forced */"):
				forced[i]++
			case strings.HasSuffix(q, "/* free */"):
				free[i]++
			}
		}
	}
	if forced[0] != 20 {
		t.Errorf("forced reads per proxy %v, want all 20 on the primary", forced)
	}
	if free[1]+free[2]+free[3] == 0 {
		t.Errorf("free reads per proxy %v: a forced read must not start a read-your-writes window", free)
	}
	if c.Stats().ReadsToPrimaryAfterWrite != 0 {
		t.Error("forced reads were counted as read-your-writes reads")
	}
}

// A read right after a write in the same scope goes to the primary; in another scope, or once
// the window has passed, it may go to a replica.
func TestReadYourWritesByTime(t *testing.T) {
	cl, _, _, exec, count := splitCluster(t, "readAfterWriteMillis=60000")
	table := fmt.Sprintf("lbd_ryw_%d", os.Getpid())
	ctx := context.Background()
	if err := exec(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec(ctx, "DROP TABLE IF EXISTS "+table) })
	scoped := lbd.ReadYourWrites(ctx)
	other := lbd.ReadYourWrites(ctx)
	if err := exec(scoped, "INSERT INTO "+table+" VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		if _, err := count(scoped, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id > %d /* mine */", table, i)); err != nil {
			t.Fatal(err)
		}
		if _, err := count(other, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE id > %d /* theirs */", table, i)); err != nil {
			t.Fatal(err)
		}
	}
	mine, theirs := countQueries(cl, "SELECT COUNT(*) FROM "+table), []int{0, 0, 0, 0}
	for i, p := range cl.Proxies() {
		mine[i], theirs[i] = 0, 0
		for _, q := range p.Queries() {
			switch {
			case strings.HasSuffix(q, "/* mine */"):
				mine[i]++
			case strings.HasSuffix(q, "/* theirs */"):
				theirs[i]++
			}
		}
	}
	t.Logf("reads after the scope's write, per proxy (primary first): %v; another scope's: %v", mine, theirs)
	if mine[0] != 40 {
		t.Errorf("%d of the scope's 40 reads went to the primary, want all", mine[0])
	}
	if theirs[1]+theirs[2]+theirs[3] == 0 {
		t.Error("another scope's reads all went to the primary: its scope has written nothing")
	}
}

// One *sql.Conn (a long checkout) that reads, then writes, then reads: the write leaves the
// replica its read was bound to and runs on the primary; nothing fails.
func TestSplitMovesALongCheckoutToThePrimaryForAWrite(t *testing.T) {
	t.Parallel()
	cl, _, db, exec, _ := splitCluster(t, "readAfterWriteMillis=0")
	table := fmt.Sprintf("lbd_splitconn_%d", os.Getpid())
	ctx := context.Background()
	if err := exec(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec(ctx, "DROP TABLE IF EXISTS "+table) })
	for i := range 8 {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO "+table+" VALUES (?)", i); err != nil {
			t.Fatalf("write on a checkout that read first: %v", err)
		}
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	for _, p := range cl.Proxies()[1:] {
		if p.Refused() != 0 {
			t.Errorf("replica %s refused %d writes", p.Addr(), p.Refused())
		}
	}
}
