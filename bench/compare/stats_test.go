package main

import (
	"math"
	"testing"
)

func TestPercentileNearestRank(t *testing.T) {
	ten := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	thousand := make([]float64, 1000)
	for i := range thousand {
		thousand[i] = float64(i + 1)
	}
	tests := []struct {
		name string
		in   []float64
		p    float64
		want float64
	}{
		{"p50 of ten", ten, 50, 5},
		{"p90 of ten", ten, 90, 9},
		{"p91 of ten rounds up", ten, 91, 10},
		{"p99 of ten", ten, 99, 10},
		{"p0 is the minimum", ten, 0, 1},
		{"p100 is the maximum", ten, 100, 10},
		{"negative p clamps", ten, -5, 1},
		{"p above 100 clamps", ten, 150, 10},
		{"single value", []float64{7}, 99.9, 7},
		{"p99.9 of 1000 is the 999th", thousand, 99.9, 999},
		{"p99 of 1000 is the 990th", thousand, 99, 990},
		{"p50 of 1000 is the 500th", thousand, 50, 500},
		{"tiny p gives the first", thousand, 0.01, 1},
	}
	for _, tc := range tests {
		if got := percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("%s: percentile(…, %v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("percentile(nil) = %v, want NaN", got)
	}
}

func TestCV(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"even spread", []float64{100, 100, 100}, 0},
		{"one of three takes all", []float64{300, 0, 0}, math.Sqrt(2)},
		{"one of two takes all", []float64{10, 0}, 1},
		{"population std", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 2.0 / 5.0},
		{"scale free", []float64{20, 40, 40, 40, 50, 50, 70, 90}, 2.0 / 5.0},
	}
	for _, tc := range tests {
		if got := cv(tc.in); !near(got, tc.want) {
			t.Errorf("%s: cv(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
	for _, in := range [][]float64{nil, {0, 0, 0}} {
		if got := cv(in); !math.IsNaN(got) {
			t.Errorf("cv(%v) = %v, want NaN", in, got)
		}
	}
}

func TestMedian(t *testing.T) {
	inf := math.Inf(1)
	nan := math.NaN()
	tests := []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5}, 5},
		{[]float64{1, nan, 3}, 2},
		{[]float64{1, inf, inf}, inf},
		{[]float64{1, 2, inf}, 2},
		{[]float64{1, inf}, inf},
	}
	for _, tc := range tests {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := median([]float64{nan}); !math.IsNaN(got) {
		t.Errorf("median(NaN) = %v, want NaN", got)
	}
	in := []float64{3, 1, 2}
	median(in)
	if in[0] != 3 || in[1] != 1 {
		t.Errorf("median reordered its argument: %v", in)
	}
}

func TestCDFPoints(t *testing.T) {
	small := []float64{1, 2, 3, 4}
	got := cdfPoints(small, 10)
	want := []cdfPoint{{1, 0.25}, {2, 0.5}, {3, 0.75}, {4, 1}}
	if len(got) != len(want) {
		t.Fatalf("cdfPoints(small) = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cdfPoints(small) = %v, want %v", got, want)
		}
	}

	big := make([]float64, 100000)
	for i := range big {
		big[i] = float64(i)
	}
	pts := cdfPoints(big, 200)
	if len(pts) > 201 {
		t.Errorf("cdfPoints kept %d points, want at most 201", len(pts))
	}
	last := pts[len(pts)-1]
	if last.X != big[len(big)-1] || last.F != 1 {
		t.Errorf("last point %v, want the maximum at F=1", last)
	}
	tail := 0
	for i, p := range pts {
		if i > 0 && (p.X < pts[i-1].X || p.F <= pts[i-1].F) {
			t.Fatalf("points not increasing at %d: %v then %v", i, pts[i-1], p)
		}
		if p.F > 0.99 {
			tail++
		}
	}
	if tail < 50 {
		t.Errorf("only %d points in the slowest 1 %%, want about half of them", tail)
	}
	if cdfPoints(nil, 10) != nil {
		t.Error("cdfPoints(nil) should be nil")
	}
}
