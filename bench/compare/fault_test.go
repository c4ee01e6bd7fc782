package main

import (
	"math"
	"testing"
	"time"
)

// ticks returns n sample times 0.05 s apart starting at 0.
func ticks(n int) []float64 {
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = float64(i) * 0.05
	}
	return ts
}

func TestQuietAfter(t *testing.T) {
	ts := ticks(200) // 0 .. 9.95 s
	counts := make([]int64, len(ts))
	// Counter grows every sample until 2.0 s, once more at 2.5 s (a straggler), then never.
	for i, x := range ts {
		switch {
		case x <= 2.0:
			counts[i] = int64(i)
		case x < 2.5:
			counts[i] = 40
		default:
			counts[i] = 41
		}
	}
	// Hang at 1.0: quiet for 1 s first from 2.5 (the 0.5 s gap before it is too short).
	if got := quietAfter(ts, counts, 1.0, 9.0, 1.0); math.Abs(got-1.5) > 1e-9 {
		t.Errorf("quietAfter = %v, want 1.5", got)
	}
	// A 0.4 s quiet span is enough from 2.0.
	if got := quietAfter(ts, counts, 1.0, 9.0, 0.4); math.Abs(got-1.0) > 1e-9 {
		t.Errorf("quietAfter(0.4 s) = %v, want 1.0", got)
	}
	// The quiet span must be observed before until.
	if got := quietAfter(ts, counts, 1.0, 3.0, 1.0); !math.IsNaN(got) {
		t.Errorf("quietAfter with until 3.0 = %v, want NaN", got)
	}
	// Never quiet.
	busy := make([]int64, len(ts))
	for i := range busy {
		busy[i] = int64(i)
	}
	if got := quietAfter(ts, busy, 0, 9.9, 1.0); !math.IsNaN(got) {
		t.Errorf("quietAfter(busy) = %v, want NaN", got)
	}
	// Quiet from the first sample at or after the hang.
	flat := make([]int64, len(ts))
	if got := quietAfter(ts, flat, 1.02, 9.9, 1.0); math.Abs(got-0.03) > 1e-9 {
		t.Errorf("quietAfter(flat) = %v, want 0.03", got)
	}
}

func TestRecoveredAfter(t *testing.T) {
	ts := ticks(400) // 0 .. 19.95 s
	hung := make([]int64, len(ts))
	total := make([]int64, len(ts))
	// 3 proxies, 300 statements per sample in all, so a fair share is 100 per sample. The hung
	// proxy gets nothing until 12.0 s, then 40 per sample, and from 15.0 s its full 100.
	var h int64
	for i, x := range ts {
		total[i] = int64(i) * 300
		switch {
		case x >= 15.0:
			h += 100
		case x >= 12.0:
			h += 40
		}
		hung[i] = h
	}
	// Resume at 10.0. A 1 s window holds 20 increments, 2000 statements in all, so half the
	// fair share is 1000: 40a + 100b ≥ 1000 with a+b = 20 first holds at b = 4, the window
	// ending at 15.15 s.
	got := recoveredAfter(ts, hung, total, 10.0, 1.0, 0.5, 3)
	if math.Abs(got-5.15) > 0.06 {
		t.Errorf("recoveredAfter = %v, want 5.15", got)
	}
	// At 35 % (700 per window) the 40-per-sample stretch qualifies once 18 of its samples are in
	// the window: at 12.85 s.
	got = recoveredAfter(ts, hung, total, 10.0, 1.0, 0.35, 3)
	if math.Abs(got-2.85) > 0.06 {
		t.Errorf("recoveredAfter(35 %%) = %v, want 2.85", got)
	}
	// Traffic before the resume does not count: a proxy that never stopped is recovered as soon
	// as a whole window after the resume has passed.
	steady := make([]int64, len(ts))
	for i := range steady {
		steady[i] = int64(i) * 100
	}
	if got := recoveredAfter(ts, steady, total, 10.0, 1.0, 0.5, 3); got < 1.0-1e-9 || got > 1.06 {
		t.Errorf("recoveredAfter(steady) = %v, want about 1", got)
	}
	// Never.
	if got := recoveredAfter(ts, make([]int64, len(ts)), total, 10.0, 1.0, 0.5, 3); !math.IsInf(got, 1) {
		t.Errorf("recoveredAfter(no traffic) = %v, want +Inf", got)
	}
	// No traffic at all is not a recovery either.
	if got := recoveredAfter(ts, make([]int64, len(ts)), make([]int64, len(ts)), 10.0, 1.0, 0.5, 3); !math.IsInf(got, 1) {
		t.Errorf("recoveredAfter(idle cluster) = %v, want +Inf", got)
	}
}

func TestFirstRotation(t *testing.T) {
	s := []faultSample{
		{T: 0, InRotation: 1}, {T: 1, InRotation: 1}, {T: 2, InRotation: -1},
		{T: 3, InRotation: 0}, {T: 4, InRotation: 0}, {T: 5, InRotation: 1},
	}
	if got := firstRotation(s, 0.5, 0); got != 3 {
		t.Errorf("out of rotation at %v, want 3", got)
	}
	if got := firstRotation(s, 3.5, 1); got != 5 {
		t.Errorf("back at %v, want 5", got)
	}
	if got := firstRotation(s, 5.5, 0); !math.IsNaN(got) {
		t.Errorf("no later change: got %v, want NaN", got)
	}
}

func TestFaultTimingFor(t *testing.T) {
	got := faultTimingFor(20 * time.Second)
	if got != (faultTiming{Warm: 5 * time.Second, Hang: 10 * time.Second, Watch: 25 * time.Second}) {
		t.Errorf("20 s: %+v", got)
	}
	got = faultTimingFor(2 * time.Second)
	if got != (faultTiming{Warm: 500 * time.Millisecond, Hang: time.Second, Watch: 2500 * time.Millisecond}) {
		t.Errorf("2 s: %+v", got)
	}
	got = faultTimingFor(time.Hour)
	if got.Hang != 10*time.Second || got.Watch != 25*time.Second {
		t.Errorf("1 h: %+v", got)
	}
}
