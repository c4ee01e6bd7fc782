package bench

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// balanceModes are the values of lbd's balance DSN parameter.
var balanceModes = []string{"connection", "statement"}

// openMode opens the cluster through lbd in one balance mode with a pool of pool connections.
// Probes and rebalancing stay off the measured path: hour-long intervals.
func openMode(b *testing.B, cluster *lbdtest.Cluster, mode string, pool int) *sql.DB {
	b.Helper()
	db, err := lbd.Open(cluster.DSN("balance=" + mode + "&checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	db.SetConnMaxLifetime(time.Hour)
	return db
}

// warmPool opens n connections at once and returns them all to the pool.
func warmPool(b *testing.B, db *sql.DB, n int) {
	b.Helper()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		cn, err := db.Conn(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if err := cn.PingContext(b.Context()); err != nil {
			b.Fatal(err)
		}
		conns[i] = cn
	}
	for _, cn := range conns {
		cn.Close()
	}
}

// select1On runs n SELECT 1 statements on the given number of goroutines.
func select1On(b *testing.B, db *sql.DB, workers, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				var one int
				if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkStatementShare reports how evenly SELECT 1 statements land on 3 proxies with 30
// pooled connections (the cv% metric: 0 is even), per balance mode and number of workers. In
// connection mode database/sql reuses the most recently returned connection first, so few
// workers leave most proxies idle; statement mode balances every checkout. ns/op is the cost
// of one statement at that concurrency. Read cv% at the default benchtime: over CI's 100
// statements one stalled statement moves the others to the remaining proxies (the pick follows
// the statements in flight), and a single run can show tens of percent.
func BenchmarkStatementShare(b *testing.B) {
	const pool = 30
	cluster := lbdtest.NewCluster(b, 3)
	for _, mode := range balanceModes {
		db := openMode(b, cluster, mode, pool)
		warmPool(b, db, pool)
		for _, workers := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("balance=%s/workers=%d", mode, workers), func(b *testing.B) {
				for _, p := range cluster.Proxies() {
					p.ResetCounters()
				}
				b.ResetTimer()
				select1On(b, db, workers, b.N)
				b.StopTimer()
				b.ReportMetric(shareCV(cluster)*100, "cv%")
			})
		}
	}
}

// BenchmarkBalanceModes compares the per-statement cost of statement mode (classifying each
// statement and binding a physical connection at every checkout) with connection mode, on 3
// proxies with 8 pooled connections.
func BenchmarkBalanceModes(b *testing.B) {
	cluster := lbdtest.NewCluster(b, 3)
	dbs := map[string]*sql.DB{}
	for _, mode := range balanceModes {
		dbs[mode] = openMode(b, cluster, mode, 8)
	}
	table := fmt.Sprintf("bench_modes_%d", rand.Uint32())
	setup := dbs["connection"]
	if _, err := setup.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY, v VARCHAR(32))"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { setup.Exec("DROP TABLE " + table) })
	const rows = 100
	for i := range rows {
		if _, err := setup.Exec("INSERT INTO "+table+" VALUES (?, ?)", i, fmt.Sprint("value-", i)); err != nil {
			b.Fatal(err)
		}
	}
	point := "SELECT v FROM " + table + " WHERE id = ?"
	queries := []struct {
		name string
		run  func(db *sql.DB, i int) error
	}{
		{"select1", func(db *sql.DB, _ int) error {
			var one int
			return db.QueryRow("SELECT 1").Scan(&one)
		}},
		{"point", func(db *sql.DB, i int) error {
			var v string
			return db.QueryRow(point, i%rows).Scan(&v)
		}},
	}
	for _, q := range queries {
		for _, mode := range balanceModes {
			db := dbs[mode]
			b.Run(q.name+"/serial/balance="+mode, func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := q.run(db, i); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run(q.name+"/parallel/balance="+mode, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					i := rand.IntN(rows)
					for pb.Next() {
						if err := q.run(db, i); err != nil {
							b.Error(err)
							return
						}
						i++
					}
				})
			})
		}
	}
}

// shareCV returns the coefficient of variation (population standard deviation over mean) of
// the statements each proxy of cluster served: 0 for an even spread, sqrt(n-1) when one of n
// proxies served them all, NaN when none was served. The cluster suites report the same figure.
func shareCV(cluster *lbdtest.Cluster) float64 {
	var counts []float64
	var sum float64
	for _, p := range cluster.Proxies() {
		c := float64(p.Statements())
		counts = append(counts, c)
		sum += c
	}
	if len(counts) == 0 || sum == 0 {
		return math.NaN()
	}
	mean := sum / float64(len(counts))
	var sq float64
	for _, c := range counts {
		sq += (c - mean) * (c - mean)
	}
	return math.Sqrt(sq/float64(len(counts))) / mean
}
