package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// statementTargets opens the same single proxy twice with the same pool size: once through
// plain go-sql-driver and once through lbd, so the difference is lbd's per-statement cost.
func statementTargets(b *testing.B) (cluster *lbdtest.Cluster, plain, balanced *sql.DB) {
	b.Helper()
	cluster = lbdtest.NewCluster(b, 1)
	p := cluster.Proxy(0)
	plainDSN := fmt.Sprintf("%s:%s@tcp(%s)/%s", cluster.User(), cluster.Password(), p.Addr(), cluster.Database())
	var err error
	if plain, err = sql.Open("mysql", plainDSN); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { plain.Close() })
	// Probes and rebalancing off the measured path: hour-long intervals.
	if balanced, err = lbd.Open(cluster.DSN("checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600")); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { balanced.Close() })
	for _, db := range []*sql.DB{plain, balanced} {
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
		db.SetConnMaxLifetime(time.Hour)
	}
	return cluster, plain, balanced
}

func BenchmarkSelect1(b *testing.B) {
	_, plain, balanced := statementTargets(b)
	for _, target := range []struct {
		name string
		db   *sql.DB
	}{{"plain", plain}, {"lbd", balanced}} {
		b.Run(target.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var one int
				if err := target.db.QueryRow("SELECT 1").Scan(&one); err != nil {
					b.Fatal(err)
				}
			}
		})
		// With a context deadline: go-sql-driver watches the context, and lbd bounds the end of
		// the result by it too.
		b.Run(target.name+"/deadline", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				var one int
				err := target.db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(target.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var one int
					if err := target.db.QueryRow("SELECT 1").Scan(&one); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkPointSelect(b *testing.B) {
	_, plain, balanced := statementTargets(b)
	table := fmt.Sprintf("bench_point_%d", rand.Uint32())
	if _, err := plain.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY, v VARCHAR(32))"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { plain.Exec("DROP TABLE " + table) })
	const rows = 100
	for i := range rows {
		if _, err := plain.Exec("INSERT INTO "+table+" VALUES (?, ?)", i, fmt.Sprint("value-", i)); err != nil {
			b.Fatal(err)
		}
	}
	query := "SELECT v FROM " + table + " WHERE id = ?"
	for _, target := range []struct {
		name string
		db   *sql.DB
	}{{"plain", plain}, {"lbd", balanced}} {
		b.Run(target.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var v string
				if err := target.db.QueryRow(query, i%rows).Scan(&v); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
