package bench

import (
	"database/sql"
	"testing"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// BenchmarkSplit is the per-statement cost of the read/write split: SELECT 1 through statement
// mode over the same cluster (one primary, two replicas, roles checked), without and with
// readWriteSplit, and with readConsistency=time's bookkeeping (a read after no write). SELECT 1
// classifies as a replica read, so the split's classification and target pick run every time.
func BenchmarkSplit(b *testing.B) {
	cl := lbdtest.NewCluster(b, 3)
	for _, p := range cl.Proxies()[1:] {
		p.SetRole(lbdtest.Replica)
	}
	open := func(params string) *sql.DB {
		c, err := lbd.NewConnector(cl.DSN("balance=statement&roleCheck=mysql&checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600&" + params))
		if err != nil {
			b.Fatal(err)
		}
		db := sql.OpenDB(awaitReplicas(b, cl, c))
		b.Cleanup(func() { db.Close() })
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
		return db
	}
	for _, v := range []struct{ name, params string }{
		{"statement", ""},
		{"split", "readWriteSplit=true&readAfterWriteMillis=0"},
		{"split+ryw", "readWriteSplit=true"},
	} {
		db := open(v.params)
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var one int
				if err := db.QueryRow("SELECT 1").Scan(&one); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
