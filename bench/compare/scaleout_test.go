package main

import (
	"testing"
	"time"
)

// summarise reads the wave and the times off the samples: 4 samples a second, the newcomer
// dialled 2 connections at 1 s and 6 more at 2 s, holding 12 (its fair share of 48 over 4
// proxies) from 2 s on.
func TestScaleOutSummarise(t *testing.T) {
	r := scaleOutResult{Fair: 0.25, FirstConnAt: -1, HalfShareAt: -1, FairShareAt: -1}
	for i := range 16 {
		pt := scaleOutPoint{T: float64(i) / 4}
		switch {
		case i >= 8:
			pt.Dials, pt.Open = 8, 12
		case i >= 4:
			pt.Dials, pt.Open = 2, 2
		}
		pt.Share = float64(pt.Open) / 48
		r.Points = append(r.Points, pt)
	}
	r.summarise(10*time.Second, 48)
	if r.FirstConnAt != 1 || r.HalfShareAt != 2 || r.FairShareAt != 2 || r.LargestWave != 6 {
		t.Fatalf("first %v half %v fair %v wave %d, want 1, 2, 2 and 6", r.FirstConnAt, r.HalfShareAt, r.FairShareAt, r.LargestWave)
	}
	if len(r.ShareAt) != 3 || r.ShareAt[0] != 0.25 {
		t.Fatalf("share at 10 s %v, want 0.25 (the last sample before it)", r.ShareAt)
	}
}
