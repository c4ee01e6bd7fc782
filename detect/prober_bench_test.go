package detect

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// benchTarget is a target whose probe answers at once and which asks for its next probe at
// once (Pacer): the probe timeout stays an hour, so no probe's deadline fires.
type benchTarget struct{ id int }

func (*benchTarget) Probe(context.Context) error { return nil }
func (*benchTarget) Close() error                { return nil }
func (*benchTarget) NextProbeIn() time.Duration  { return time.Nanosecond }

// BenchmarkProberSchedule: one op is one probe taken from the schedule, run, reported and
// rescheduled, with targets targets each probed again as soon as its probe ends (so the workers
// never wait).
// Reported beside the time: the live heap each target costs while it waits for its probe
// (B/target; at 3 targets this is mostly noise) and the prober's goroutines while it runs
// (goroutines), at most DefaultMaxProbes+1 whatever the number of targets. Compare the sizes as
// ratios within one run.
func BenchmarkProberSchedule(b *testing.B) {
	for _, n := range []int{3, 10_000, 50_000} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			targets := make([]*benchTarget, n)
			for i := range targets {
				targets[i] = &benchTarget{id: i}
			}
			newProber := func(jitter time.Duration, report func(Target, error, time.Duration)) *Prober {
				p, err := NewProber(ProberConfig{Interval: time.Hour,
					Jitter: func(time.Duration) time.Duration { return jitter }, Report: report})
				if err != nil {
					b.Fatal(err)
				}
				return p
			}

			// The heap per target, none of them due.
			before := benchHeap()
			idle := newProber(time.Hour, func(Target, error, time.Duration) {})
			for _, t := range targets {
				idle.Add(t)
			}
			perTarget := float64(benchHeap()-before) / float64(n)
			idle.Close()

			var done atomic.Int64
			base := runtime.NumGoroutine()
			p := newProber(0, func(Target, error, time.Duration) { done.Add(1) })
			defer p.Close()
			for _, t := range targets {
				p.Add(t)
			}
			peak := 0
			b.ResetTimer()
			end := done.Load() + int64(b.N)
			for done.Load() < end {
				peak = max(peak, runtime.NumGoroutine()-base)
				runtime.Gosched()
			}
			b.StopTimer()
			b.ReportMetric(perTarget, "B/target")
			b.ReportMetric(float64(peak), "goroutines")
		})
	}
}

func benchHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
