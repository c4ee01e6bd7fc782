package lbd

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// BenchmarkTransportSelect1 runs `SELECT 1` on one pooled connection over TLS (and, for
// comparison, in the clear and over the compressed protocol) through lbd, whose dialer runs
// TLS or compression beneath go-sql-driver with the protocol guard reading every packet, and
// through go-sql-driver alone, which runs them itself, against the same mysqlfake server. The
// two alternate query by query, so that the machine's load falls on both alike; the metrics are
// each side's median time per query and the ratio of lbd's median to go-sql-driver's (medians,
// because on a shared machine a few descheduled queries would swing a mean).
func BenchmarkTransportSelect1(b *testing.B) {
	for _, tr := range []string{"plain", "tls", "compress"} {
		b.Run(tr, func(b *testing.B) {
			cfg := mysqlfake.Config{DeprecateEOF: true}
			params := transportParams(b, tr, &cfg)
			srv := mysqlfake.Start(b, cfg)
			c, err := NewConnector("u:p@lb("+srv.Addr()+")/db?timeout=5s"+params, append(quiet(), WithLogger(discardLogger()))...)
			if err != nil {
				b.Fatal(err)
			}
			viaLBD := sql.OpenDB(c)
			defer viaLBD.Close()
			direct, err := sql.Open("mysql", "u:p@tcp("+srv.Addr()+")/db?timeout=5s"+params)
			if err != nil {
				b.Fatal(err)
			}
			defer direct.Close()
			ctx := context.Background()
			query := func(db *sql.DB) time.Duration {
				start := time.Now()
				var v string
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil || v != "1" {
					b.Fatalf("SELECT 1: %q, %v", v, err)
				}
				return time.Since(start)
			}
			for _, db := range []*sql.DB{viaLBD, direct} { // dial and log in before timing
				db.SetMaxOpenConns(1)
				query(db)
			}
			if strings.Contains(tr, "tls") && srv.TLSConns() < 2 || tr == "compress" && srv.CompressedConns() < 2 {
				b.Fatalf("the connections did not switch to %s", tr)
			}
			var lbdTimes, driverTimes []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				lbdTimes = append(lbdTimes, query(viaLBD))
				driverTimes = append(driverTimes, query(direct))
			}
			lbdMedian, driverMedian := median(lbdTimes), median(driverTimes)
			b.ReportMetric(float64(lbdMedian.Nanoseconds()), "lbd-ns/query")
			b.ReportMetric(float64(driverMedian.Nanoseconds()), "driver-ns/query")
			b.ReportMetric(float64(lbdMedian)/float64(driverMedian), "ratio")
		})
	}
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
