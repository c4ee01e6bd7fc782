package routing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/clustertest/history"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// historyWorkers is how many workers every history run has.
const historyWorkers = 16

// historyLoad is the workload the history checker judges: each worker has a key of its own,
// writes 1, 2, 3, ... to it (one row per write, carrying the operation's id) and reads the key's
// highest value back twice after each write, all in a read-your-writes scope of its own. A
// write whose outcome is unknown ends the key: the worker moves to a fresh one, so that every
// read can be judged against what its scope knows.
type historyLoad struct {
	db       *sql.DB
	table    string
	rec      history.Recorder
	nextID   atomic.Int64
	done     atomic.Int64
	stopping atomic.Bool
	wg       sync.WaitGroup
}

// historyTable creates the workload's table through create, named after name, and drops it
// through every handle of drop when the test ends.
func historyTable(t *testing.T, name string, create *sql.DB, drop ...*sql.DB) string {
	t.Helper()
	table := fmt.Sprintf("lbd_history_%s_%d", name, os.Getpid())
	t.Cleanup(func() {
		for _, db := range drop {
			db.Exec("DROP TABLE IF EXISTS " + table)
		}
	})
	if _, err := create.Exec("CREATE TABLE " + table +
		" (seq BIGINT AUTO_INCREMENT PRIMARY KEY, op BIGINT NOT NULL, k BIGINT NOT NULL, v BIGINT NOT NULL, KEY (k, v))"); err != nil {
		t.Fatal(err)
	}
	return table
}

// startHistory starts historyWorkers workers on db over table.
func startHistory(db *sql.DB, table string) *historyLoad {
	l := &historyLoad{db: db, table: table}
	for w := range historyWorkers {
		l.wg.Add(1)
		go l.worker(w)
	}
	return l
}

// stop makes the workers finish the operation they are in and waits for them. Each
// operation has a deadline of its own, so stopping cuts no statement.
func (l *historyLoad) stop() {
	l.stopping.Store(true)
	l.wg.Wait()
}

// waitOps waits until the workers have finished n more operations.
func (l *historyLoad) waitOps(t *testing.T, n int64) {
	t.Helper()
	target := l.done.Load() + n
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("%d more operations", n), func() bool { return l.done.Load() >= target })
}

func (l *historyLoad) worker(w int) {
	defer l.wg.Done()
	scope, name := lbd.ReadYourWrites(context.Background()), fmt.Sprintf("w%d", w)
	key, v := int64(w)*1_000_000, int64(0)
	for !l.stopping.Load() {
		v++
		if op := l.run(scope, w, name, history.Write, key, v); op.Outcome == history.Unknown {
			key, v = key+1, 0
			continue
		}
		l.run(scope, w, name, history.Read, key, 0)
		l.run(scope, w, name, history.Read, key, 0)
	}
}

// run runs one operation and records it.
func (l *historyLoad) run(scope context.Context, w int, name string, kind history.Kind, key, v int64) history.Op {
	op := history.Op{ID: l.nextID.Add(1), Worker: w, Scope: name, Kind: kind, Key: key, Value: v}
	ctx, cancel := context.WithTimeout(scope, 10*time.Second)
	defer cancel()
	op.Start = time.Now()
	var err error
	if kind == history.Write {
		_, err = l.db.ExecContext(ctx, "INSERT INTO "+l.table+" (op, k, v) VALUES (?, ?, ?)", op.ID, key, v)
	} else {
		// The always-true "id >= 0" makes the text of every read unique, so that a proxy's
		// record of it says where it ran.
		var got sql.NullInt64
		err = l.db.QueryRowContext(ctx, "SELECT MAX(v) FROM "+l.table+" WHERE k = ? AND ? >= 0", key, op.ID).Scan(&got)
		op.Value = got.Int64
	}
	op.End = time.Now()
	op.Err, op.Outcome = err, outcomeOf(err)
	l.rec.Add(op)
	l.done.Add(1)
	return op
}

// outcomeOf says what a caller can know from err: a server's refusal, or lbd's refusal of a
// statement it did not send, means the statement did not take effect; any other error leaves
// the outcome unknown.
func outcomeOf(err error) history.Outcome {
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return history.OK
	case errors.As(err, &me), errors.Is(err, lbd.ErrPrimaryChanged), errors.Is(err, lbd.ErrPinnedToReplica):
		return history.Failed
	}
	return history.Unknown
}

// appliedOps reads, from the server db (the primary, directly), how many rows each operation
// id has in table, on one session that runs the statements of setup first.
func appliedOps(t *testing.T, db *sql.DB, table string, setup ...string) map[int64]int {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range setup {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.QueryContext(ctx, "SELECT op, COUNT(*) FROM "+table+" GROUP BY op")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkHistory checks the history of l, stopped, against final (read after the stop) and
// returns the report, failing t when the workload did too little to judge: fewer than 200
// acknowledged writes or reads. A proxy's record, when given, names the node of each operation
// it saw.
func checkHistory(t *testing.T, l *historyLoad, final history.Final, record ...proxyRecord) history.Report {
	t.Helper()
	if !l.stopping.Load() {
		t.Fatal("checkHistory before the workload stopped: its final state may miss writes still running")
	}
	ops := l.rec.Ops()
	for _, rec := range record {
		for i := range ops {
			if rec.ops[ops[i].ID] > 0 {
				ops[i].Node = strings.TrimPrefix(ops[i].Node+","+rec.addr, ",")
			}
		}
	}
	r, err := history.Check(ops, final)
	if err != nil {
		t.Fatal(err)
	}
	if r.Writes-r.Unknown < 200 || r.Reads < 200 {
		t.Fatalf("the workload did too little to judge: %s", r)
	}
	return r
}

// wantClean fails t with the minimal histories of the anomalies r found.
func wantClean(t *testing.T, r history.Report) {
	t.Helper()
	if len(r.Anomalies) != 0 {
		t.Errorf("the history checker found anomalies: %s", r)
	}
}

// The history checker over a manual switchover of the real pair under the read/write split,
// 16 workers each in a read-your-writes scope of its own: with readConsistency=gtid and with
// readConsistency=time (readAfterWriteMillis), no acknowledged write is lost or applied twice,
// no write of unknown outcome is applied twice, and every read sees its scope's writes and
// never goes back; with gtid every acknowledged write's position was captured, each reported by
// the write's own answer (session tracking). After the
// switch the old primary, now read-only, no longer receives the new primary's writes
// (replication runs one way), so a read sent there by mistake is stale for good.
func TestHistoryAcrossASwitchoverOnMariaDB(t *testing.T) {
	for _, mode := range []string{"gtid", "time"} {
		t.Run(mode, func(t *testing.T) {
			start := time.Now()
			ps := openPairSwitch(t, "balance=statement&readWriteSplit=true&interpolateParams=true&readAfterWriteMillis=1000&readConsistency="+mode)
			table := historyTable(t, "switch_"+mode, ps.primary, ps.pAdmin, ps.rAdmin)
			testkit.WaitFor(t, 10*time.Second, "the table on the replica", func() bool {
				_, err := ps.replica.Exec("SELECT 1 FROM " + table)
				return err == nil
			})
			l := startHistory(ps.db, table)
			defer l.stop()
			l.waitOps(t, 1500)
			ps.switchover(t, 0)
			ps.waitRoles(t, nodes.RoleReplica, nodes.RolePrimary)
			l.waitOps(t, 1500)
			l.stop()
			r := checkHistory(t, l, history.Final{Applied: appliedOps(t, ps.replica, table)})
			cs := ps.c.Stats().Causal
			t.Logf("switchover, readConsistency=%s: %s; %d positions captured (%d reported by the writes' answers), causal waits %d, fallbacks %d; %v in all",
				mode, r, cs.Captures, cs.Reported, cs.Waits, cs.Fallbacks, time.Since(start).Round(time.Millisecond))
			wantClean(t, r)
			if acked := r.Writes - r.Failed - r.Unknown; mode == "gtid" && cs.Captures < uint64(acked) {
				t.Errorf("%d positions captured for %d acknowledged writes: the reads after the others did not wait for them", cs.Captures, acked)
			}
			// MariaDB tracks last_gtid once lbd asks: every position comes with its write's
			// answer, and no question follows a write.
			if mode == "gtid" && cs.Reported != cs.Captures {
				t.Errorf("%d of %d positions came with their writes' answers: the rest cost a question each", cs.Reported, cs.Captures)
			}
		})
	}
}

// The history checker can fail: on the real pair with the replica 1 s behind and the split's
// read-your-writes off (readAfterWriteMillis=0), reads that land on the replica miss their
// scope's last write, and the checker reports them as stale reads, each with the write it
// missed and the relay in front of the replica as the read's node. No write is lost or applied
// twice all the same.
func TestHistoryFindsStaleReadsWithoutReadYourWritesOnMariaDB(t *testing.T) {
	start := time.Now()
	primary, replica := mariaDBPair(t)
	rAdmin := mariaDBAdmin(t, os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN"))
	table := historyTable(t, "stale", primary, primary)
	testkit.WaitFor(t, 10*time.Second, "the table on the replica", func() bool {
		_, err := replica.Exec("SELECT 1 FROM " + table)
		return err == nil
	})
	delayReplica(t, rAdmin, time.Second)
	pr := openPairRelays(t, 1, "readAfterWriteMillis=0")
	l := startHistory(pr.db, table)
	defer l.stop()
	l.waitOps(t, 1500)
	l.stop()
	records, sends := pr.records(t, table)
	r := checkHistory(t, l, history.Final{Applied: appliedOps(t, primary, table), Sends: sends}, records...)
	t.Logf("read-your-writes off, replica 1 s behind: %s; %v in all", r, time.Since(start).Round(time.Millisecond))
	if r.Count(history.StaleRead) == 0 {
		t.Errorf("no stale read found with read-your-writes off and the replica 1 s behind: the checker cannot fail: %s", r)
	}
	onReplica := pr.toReplica.Proxy(0).Addr()
	for _, a := range r.Anomalies {
		switch {
		case a.Kind != history.StaleRead && a.Kind != history.NonMonotonicRead:
			t.Errorf("with read-your-writes off only reads may go wrong; found %s", a.Format(r.Origin))
		case a.Ops[len(a.Ops)-1].Node != onReplica:
			t.Errorf("a read that went wrong ran on %q, not on the replica %s: %s", a.Ops[len(a.Ops)-1].Node, onReplica, a.Format(r.Origin))
		}
	}
}

// The history checker over a proxy killed in front of the real pair: two lbdtest relays in
// front of the primary and one in front of the replica, the read/write split with
// readConsistency=gtid and 16 workers; midway one of the primary's relays is stopped, cutting
// its connections. The relays record every statement they receive, so the checker also sees
// whether any write was sent twice: none was, none is lost or applied twice, and every read
// sees its scope's writes.
func TestHistoryAcrossAKilledProxyOnMariaDB(t *testing.T) {
	start := time.Now()
	primary, _ := mariaDBPair(t)
	table := historyTable(t, "proxy", primary, primary)
	pr := openPairRelays(t, 2, "readConsistency=gtid&readAfterWriteMillis=300")
	l := startHistory(pr.db, table)
	defer l.stop()
	l.waitOps(t, 2000)
	killed := pr.toPrimary.Proxy(0)
	if err := killed.Stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the stopped relay down", func() bool {
		s, _ := clusterkit.NodeState(pr.c, killed.Addr())
		return s == lbd.StateDown
	})
	l.waitOps(t, 2000)
	l.stop()

	records, sends := pr.records(t, table)
	r := checkHistory(t, l, history.Final{Applied: appliedOps(t, primary, table), Sends: sends}, records...)
	if len(sends) < r.Writes-r.Unknown {
		t.Fatalf("the relays recorded %d writes; %d were acknowledged", len(sends), r.Writes-r.Unknown)
	}
	t.Logf("relay killed in front of the primary: %s; the relays received %v and %v statements; %v in all",
		r, clusterkit.StatementCounts(pr.toPrimary), clusterkit.StatementCounts(pr.toReplica), time.Since(start).Round(time.Millisecond))
	wantClean(t, r)
}

// pairRelays is the read/write split over lbdtest relays in front of the real pair: some in
// front of the primary, one in front of the replica acting read-only as the server behind it
// is (a relay answers the role check for itself). The relays cannot follow a switchover; the
// runs over them have none.
type pairRelays struct {
	toPrimary, toReplica *lbdtest.Cluster
	c                    *lbd.Connector
	db                   *sql.DB
}

// openPairRelays starts primaries relays in front of the pair's primary and one in front of
// its replica, opens the split over them with params, and waits for the role checks. It skips
// the test when the pair's environment is not set.
func openPairRelays(t *testing.T, primaries int, params string) *pairRelays {
	t.Helper()
	mariaDBPair(t)
	pDSN, rDSN := os.Getenv("LBD_TEST_MARIADB_PRIMARY_DSN"), os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN")
	pr := &pairRelays{}
	t.Setenv(lbdtest.EnvBackendDSN, pDSN)
	pr.toPrimary = lbdtest.NewCluster(t, primaries)
	t.Setenv(lbdtest.EnvBackendDSN, rDSN)
	pr.toReplica = lbdtest.NewCluster(t, 1)
	pr.toReplica.Proxy(0).SetRole(lbdtest.Replica)
	cfg, err := mysql.ParseDSN(pDSN)
	if err != nil {
		t.Fatal(err)
	}
	addrs := append(pr.toPrimary.Addrs(), pr.toReplica.Addrs()...)
	dsn := fmt.Sprintf("%s:%s@lb(%s)/%s?balance=statement&readWriteSplit=true&roleCheck=mysql&interpolateParams=true&%s",
		cfg.User, cfg.Passwd, strings.Join(addrs, ","), cfg.DBName, params)
	pr.c, err = lbd.NewConnector(dsn, clusterkit.Fast(100*time.Millisecond, 250*time.Millisecond, time.Hour, &testkit.Logs{})...)
	if err != nil {
		t.Fatal(err)
	}
	pr.db = sql.OpenDB(pr.c)
	t.Cleanup(func() { pr.db.Close() })
	want := make([]nodes.Role, 0, len(addrs))
	for range primaries {
		want = append(want, nodes.RolePrimary)
	}
	clusterkit.WaitRoles(t, pr.c, append(want, nodes.RoleReplica)...)
	return pr
}

// records returns every relay's record of the history workload on table, and how many times
// the primary's relays received each write (the replica's refuses writes).
func (pr *pairRelays) records(t *testing.T, table string) ([]proxyRecord, map[int64]int) {
	t.Helper()
	sends := map[int64]int{}
	var records []proxyRecord
	for _, p := range append(pr.toPrimary.Proxies(), pr.toReplica.Proxies()...) {
		rec := recordOf(t, p, table)
		records = append(records, rec)
		if p.Role() == lbdtest.Primary {
			for id, n := range rec.writes {
				sends[id] += n
			}
		}
	}
	return records, sends
}

// proxyRecord is what one proxy received of the history workload: how many times each
// operation's statement, and each write's, by operation id.
type proxyRecord struct {
	addr   string
	ops    map[int64]int
	writes map[int64]int
}

// recordOf reads p's record of the workload's statements on table; it fails t when p received
// more statements than it keeps.
func recordOf(t *testing.T, p *lbdtest.Proxy, table string) proxyRecord {
	t.Helper()
	if n := p.Statements(); n > lbdtest.MaxQueries {
		t.Fatalf("relay %s received %d statements, more than the %d it records: shorten the run", p.Addr(), n, lbdtest.MaxQueries)
	}
	rec := proxyRecord{addr: p.Addr(), ops: map[int64]int{}, writes: map[int64]int{}}
	write, read := "INSERT INTO "+table+" (op, k, v) VALUES (", "SELECT MAX(v) FROM "+table+" WHERE k = "
	for _, q := range p.Queries() {
		var id, key int64
		if rest, ok := strings.CutPrefix(q, write); ok {
			if _, err := fmt.Sscanf(rest, "%d", &id); err != nil {
				t.Fatalf("a recorded write %q: %v", q, err)
			}
			rec.writes[id]++
		} else if rest, ok := strings.CutPrefix(q, read); ok {
			if _, err := fmt.Sscanf(rest, "%d AND %d", &key, &id); err != nil {
				t.Fatalf("a recorded read %q: %v", q, err)
			}
		} else {
			continue
		}
		rec.ops[id]++
	}
	return rec
}
