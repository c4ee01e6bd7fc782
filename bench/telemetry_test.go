package bench

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	lbdotel "github.com/lbd-go/lbd/metrics/otel"
)

// nopObserver is a StatementObserver that does nothing: what lbd's side of the hook costs.
type nopObserver struct{}

func (nopObserver) StatementStart(ctx context.Context, _ lbd.StatementInfo) context.Context {
	return ctx
}
func (nopObserver) StatementEnd(context.Context, lbd.StatementInfo, time.Duration, error) {}

// BenchmarkStatementTelemetry measures what per-statement telemetry costs a SELECT 1 over three
// proxies, in each balance mode: Connectors that differ only in their statement observer, none
// (off), one that does nothing (lbd's side of the hook: the statement's description, its verb
// and node) and lbdotel.WithStatementTelemetry with the OpenTelemetry SDK (a span through a
// batch processor to an exporter that drops it, and a histogram measurement read by a manual
// reader).
//
// The sub-benchmarks off, observer and otel each run SELECT 1 on their own Connector and give
// exact allocations per statement; paired runs one statement on each Connector per iteration,
// in turns, and reports each one's median time per statement and the ratios to off (medians,
// because on a shared machine a few descheduled statements would swing a mean).
func BenchmarkStatementTelemetry(b *testing.B) {
	cluster := lbdtest.NewCluster(b, 3)
	for _, mode := range balanceModes {
		b.Run("balance="+mode, func(b *testing.B) {
			open := func(opts ...lbd.Option) *sql.DB {
				opts = append(opts, lbd.WithRand(func(int) int { return 0 }))
				db, err := lbd.Open(cluster.DSN("balance="+mode+"&checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600"), opts...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { db.Close() })
				db.SetMaxOpenConns(4)
				db.SetMaxIdleConns(4)
				warmPool(b, db, 4)
				return db
			}
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			b.Cleanup(func() { tp.Shutdown(context.Background()) })
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { mp.Shutdown(context.Background()) })
			setups := []struct {
				name string
				db   *sql.DB
			}{
				{"off", open()},
				{"observer", open(lbd.WithStatementObserver(nopObserver{}))},
				{"otel", open(lbdotel.WithStatementTelemetry(lbdotel.StatementOptions{TracerProvider: tp, MeterProvider: mp}))},
			}
			ctx := context.Background()
			one := func(db *sql.DB) time.Duration {
				start := time.Now()
				var v int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			for _, s := range setups {
				b.Run(s.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						one(s.db)
					}
				})
			}
			b.Run("paired", func(b *testing.B) {
				times := make([][]time.Duration, len(setups))
				i := 0
				for b.Loop() {
					for k := range setups { // a different one first each iteration
						j := (i + k) % len(setups)
						times[j] = append(times[j], one(setups[j].db))
					}
					i++
				}
				med := make([]float64, len(setups))
				for j, ts := range times {
					slices.Sort(ts)
					med[j] = float64(ts[len(ts)/2].Nanoseconds())
					b.ReportMetric(med[j], "ns/stmt-"+setups[j].name)
				}
				for j := 1; j < len(setups); j++ {
					b.ReportMetric(med[j]/med[0], setups[j].name+"/off")
				}
			})
		})
	}
}
