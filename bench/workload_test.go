package bench

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	lbdprom "github.com/lbd-go/lbd/metrics/prometheus"
	"github.com/lbd-go/lbd/nodes"
)

// The workload of bench/compare: 60 % point selects by primary key, 20 % SELECT 1, 20 %
// single-row upserts, parameters interpolated on the client, every statement under a one-second
// deadline.
const (
	mixPointSelect = 60
	mixSelectOne   = 20
	mixReadRows    = 100 // point selects read ids 1..100
	mixWriteRows   = 100 // upserts write the 100 ids after those
	mixParams      = "interpolateParams=true&timeout=1s"
	mixDeadline    = time.Second
	mixRound       = 200 // statements per setup before the next setup takes its turn
)

// BenchmarkWorkload is bench/compare's steady load in benchmark form: the same statement mix
// through three lbdtest relays (to the MariaDB in LBD_TEST_MYSQL_DSN when set, else to the
// in-memory backend). Each sub-benchmark runs it with 1 or 16 workers directly to one relay with
// go-sql-driver and through one lbd setup, in rounds of 200 statements that take turns so that
// both see the same machine; one op is one statement on each. It reports the setup's throughput
// relative to the direct connection (lbd/direct: 1.00 costs nothing) and its process CPU per
// statement relative to direct's (cpu-lbd/direct). The relays run in this process, so both CPU
// figures carry the same relay cost per statement.
//
// The setups: lbd at its defaults (connection mode, probes, rebalancing and passive outlier
// detection on), the defaults without passive detection, statement mode, the read/write split
// (two of its own three relays answer the role check as replicas) without and with the
// read-your-writes window, and the defaults with a Prometheus collector gathered every second.
func BenchmarkWorkload(b *testing.B) {
	cl := lbdtest.NewCluster(b, 3)
	// The split's setups get relays of their own to the same backend: a relay answering the
	// role check as a replica also refuses writes, as a read-only server does.
	roles := lbdtest.NewCluster(b, 3)
	for _, p := range roles.Proxies()[1:] {
		p.SetRole(lbdtest.Replica)
	}
	table := fmt.Sprintf("bench_mix_%d", rand.Uint32())
	// Both clusters relay to the same MariaDB when one is set, else each has its own backend.
	mix := fillMixTable(b, openDirect(b, cl), table)
	fillMixTable(b, openDirect(b, roles), table)
	// Each setup opens its lbd Connector.
	setups := []struct {
		key  string
		open func(b *testing.B) *lbd.Connector
	}{
		{"lbd", func(b *testing.B) *lbd.Connector { return mixConnector(b, cl, "") }},
		{"no-passive", func(b *testing.B) *lbd.Connector {
			cfg, err := lbd.ParseDSN(cl.DSN(mixParams))
			if err != nil {
				b.Fatal(err)
			}
			cfg.MaxEjectionPercent = 0
			c, err := lbd.NewConnectorFromConfig(cfg, quiet)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
		{"statement", func(b *testing.B) *lbd.Connector { return mixConnector(b, cl, "balance=statement") }},
		{"split", func(b *testing.B) *lbd.Connector {
			return awaitReplicas(b, roles, mixConnector(b, roles, "balance=statement&roleCheck=mysql&readWriteSplit=true&readAfterWriteMillis=0"))
		}},
		{"split+ryw", func(b *testing.B) *lbd.Connector {
			return awaitReplicas(b, roles, mixConnector(b, roles, "balance=statement&roleCheck=mysql&readWriteSplit=true"))
		}},
		{"prometheus", func(b *testing.B) *lbd.Connector {
			c := mixConnector(b, cl, "")
			scrapeEverySecond(b, c)
			return c
		}},
	}
	for _, workers := range []int{1, 16} {
		for _, setup := range setups {
			b.Run(fmt.Sprintf("workers=%d/%s", workers, setup.key), func(b *testing.B) {
				c := setup.open(b)
				db := sql.OpenDB(c)
				b.Cleanup(func() { db.Close() })
				compareMix(b, mix, workers, openDirect(b, cl), db, c)
			})
		}
	}
}

// BenchmarkWorkloadCausal is BenchmarkWorkload's comparison on a real MariaDB primary and
// replica (LBD_TEST_MARIADB_PRIMARY_DSN and LBD_TEST_MARIADB_REPLICA_DSN, which .ci/mariadb-pair
// prints; skipped without them), with no relay in between: directly to the primary against
// lbd's read/write split over both, with read-your-writes kept by time (readConsistency=time,
// reads after a write go to the primary for 300 ms) and by GTID (readConsistency=gtid, a read
// after a write waits on the replica until it applied the write).
func BenchmarkWorkloadCausal(b *testing.B) {
	primary, replica := os.Getenv("LBD_TEST_MARIADB_PRIMARY_DSN"), os.Getenv("LBD_TEST_MARIADB_REPLICA_DSN")
	if primary == "" || replica == "" {
		b.Skip("LBD_TEST_MARIADB_PRIMARY_DSN and LBD_TEST_MARIADB_REPLICA_DSN are not set; .ci/mariadb-pair start prints them")
	}
	pCfg, err := mysql.ParseDSN(primary)
	if err != nil {
		b.Fatal(err)
	}
	rCfg, err := mysql.ParseDSN(replica)
	if err != nil {
		b.Fatal(err)
	}
	openPrimary := func(b *testing.B) *sql.DB {
		return openPlain(b, fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", pCfg.User, pCfg.Passwd, pCfg.Addr, pCfg.DBName, mixParams))
	}
	table := fmt.Sprintf("bench_mix_%d", rand.Uint32())
	mix := fillMixTable(b, openPrimary(b), table)
	// The table is written directly, beside lbd, so no read-your-writes scope covers it: the
	// replica must have it before a read goes there.
	rdb := openPlain(b, fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", rCfg.User, rCfg.Passwd, rCfg.Addr, rCfg.DBName, mixParams))
	for deadline := time.Now().Add(10 * time.Second); ; {
		var n int
		if rdb.QueryRow("SELECT COUNT(*) FROM "+table).Scan(&n) == nil && n == mixReadRows+mixWriteRows {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the replica %s did not have the table's %d rows within 10 s", rCfg.Addr, mixReadRows+mixWriteRows)
		}
		time.Sleep(10 * time.Millisecond)
	}
	dsn := fmt.Sprintf("%s:%s@lb(%s,%s)/%s?%s&balance=statement&roleCheck=mysql&readWriteSplit=true",
		pCfg.User, pCfg.Passwd, pCfg.Addr, rCfg.Addr, pCfg.DBName, mixParams)
	for _, workers := range []int{1, 16} {
		for _, consistency := range []string{"time", "gtid"} {
			b.Run(fmt.Sprintf("workers=%d/%s", workers, consistency), func(b *testing.B) {
				cfg, err := lbd.ParseDSN(dsn)
				if err != nil {
					b.Fatal(err)
				}
				cfg.ReadConsistency = consistency
				c, err := lbd.NewConnectorFromConfig(cfg, quiet)
				if err != nil {
					b.Fatal(err)
				}
				db := sql.OpenDB(c)
				b.Cleanup(func() { db.Close() })
				awaitRole(b, c, rCfg.Addr, nodes.RoleReplica)
				compareMix(b, mix, workers, openPrimary(b), db, c)
			})
		}
	}
}

// compareMix runs b.N statements of the mix on direct and on db, with the given number of
// workers each, in rounds that take turns, and reports db's throughput and process CPU per
// statement relative to direct's, and how many physical connections c dialed per thousand
// statements once the pool was open (dials/kstmt; 0 in a steady pool).
func compareMix(b *testing.B, mix mixStatements, workers int, direct, db *sql.DB, c *lbd.Connector) {
	pools := []*sql.DB{direct, db}
	var elapsed, cpu [2]time.Duration
	for _, p := range pools {
		p.SetMaxOpenConns(workers)
		p.SetMaxIdleConns(workers)
		// Open the pool before measuring.
		runMix(b, p, mix, workers, 4*workers, 0)
	}
	dials0 := dials(c)
	b.ResetTimer()
	for done := 0; done < b.N; done += mixRound {
		n := min(mixRound, b.N-done)
		seed := uint64(done + 1)
		// Alternate who goes first, so that neither always follows the other.
		for i := range pools {
			k := (i + done/mixRound) % 2
			cpu0, t0 := processCPU(), time.Now()
			runMix(b, pools[k], mix, workers, n, seed)
			elapsed[k] += time.Since(t0)
			cpu[k] += processCPU() - cpu0
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(elapsed[0])/float64(elapsed[1]), "lbd/direct")
	if cpu[0] > 0 {
		b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-lbd/direct")
	}
	b.ReportMetric(float64(dials(c)-dials0)*1000/float64(b.N), "dials/kstmt")
	b.ReportMetric(float64(elapsed[0].Nanoseconds())/float64(b.N), "ns/stmt-direct")
	b.ReportMetric(float64(elapsed[1].Nanoseconds())/float64(b.N), "ns/stmt-lbd")
}

type mixStatements struct{ pointSelect, upsert string }

// fillMixTable creates table through db, if it is not there, with the rows the mix reads and
// writes, and drops it when the benchmark ends.
func fillMixTable(b *testing.B, db *sql.DB, table string) mixStatements {
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS " + table + " (id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL, v VARCHAR(64) NOT NULL)"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS " + table) })
	for id := 1; id <= mixReadRows+mixWriteRows; id++ {
		if _, err := db.Exec("INSERT INTO "+table+" VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE k = VALUES(k)", id, id%97, "row-"+strconv.Itoa(id)); err != nil {
			b.Fatal(err)
		}
	}
	return mixStatements{
		pointSelect: "SELECT v FROM " + table + " WHERE id = ?",
		upsert:      "INSERT INTO " + table + " (id, k, v) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE k = VALUES(k), v = VALUES(v)",
	}
}

// runMix runs n statements of the mix with the given number of workers on db; the statements
// each worker runs follow from seed, so every setup of a round runs the same ones.
func runMix(b *testing.B, db *sql.DB, mix mixStatements, workers, n int, seed uint64) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for next.Add(1) <= int64(n) {
				ctx, cancel := context.WithTimeout(context.Background(), mixDeadline)
				var err error
				switch op := rng.IntN(100); {
				case op < mixPointSelect:
					var v string
					err = db.QueryRowContext(ctx, mix.pointSelect, 1+rng.IntN(mixReadRows)).Scan(&v)
				case op < mixPointSelect+mixSelectOne:
					var one int
					err = db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
				default:
					k := rng.IntN(1 << 20)
					_, err = db.ExecContext(ctx, mix.upsert, mixReadRows+1+rng.IntN(mixWriteRows), k, "w"+strconv.Itoa(k))
				}
				cancel()
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// openDirect opens go-sql-driver alone on the cluster's first relay, with the mix's parameters.
func openDirect(b *testing.B, cl *lbdtest.Cluster) *sql.DB {
	return openPlain(b, fmt.Sprintf("%s:%s@tcp(%s)/%s?%s", cl.User(), cl.Password(), cl.Proxy(0).Addr(), cl.Database(), mixParams))
}

// openPlain opens go-sql-driver alone on dsn.
func openPlain(b *testing.B, dsn string) *sql.DB {
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := mysql.NewConnector(c)
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(conn)
	b.Cleanup(func() { db.Close() })
	return db
}

// quiet keeps node state changes out of the benchmark's output.
var quiet = lbd.WithLogger(slog.New(slog.DiscardHandler))

// mixConnector opens lbd over the whole cluster at its defaults plus params.
func mixConnector(b *testing.B, cl *lbdtest.Cluster, params string) *lbd.Connector {
	if params != "" {
		params = "&" + params
	}
	c, err := lbd.NewConnector(cl.DSN(mixParams+params), quiet)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// awaitReplicas returns c once its role checks have found the cluster's replicas.
func awaitReplicas(b *testing.B, cl *lbdtest.Cluster, c *lbd.Connector) *lbd.Connector {
	awaitRole(b, c, cl.Proxy(1).Addr(), nodes.RoleReplica)
	return c
}

// awaitRole returns once c's role check has found addr in role r, polling for up to 5 s.
func awaitRole(b *testing.B, c *lbd.Connector, addr string, r nodes.Role) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ns, _ := c.Stats().Node(addr); ns.Role == r {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the role check did not find %s a %v within 5s", addr, r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// scrapeEverySecond registers a Prometheus collector for c and gathers it every second, as a
// scraping Prometheus would (more often than its usual 15 s), until the benchmark ends.
func scrapeEverySecond(b *testing.B, c *lbd.Connector) {
	col := lbdprom.NewCollector(c, lbdprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, err := reg.Gather(); err != nil {
					b.Error(err)
				}
			}
		}
	})
	b.Cleanup(func() {
		close(done)
		wg.Wait()
		col.Close()
	})
}

// dials is how many physical connections c has dialed, probes' included.
func dials(c *lbd.Connector) uint64 {
	var n uint64
	for _, ns := range c.Stats().Nodes {
		n += ns.Dials
	}
	return n
}

// processCPU is the user and system time this process has used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
