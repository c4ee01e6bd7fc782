package main

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseWorkers(t *testing.T) {
	got, err := parseWorkers(" 1, 4,16 ,64,")
	if err != nil || !slices.Equal(got, []int{1, 4, 16, 64}) {
		t.Errorf("parseWorkers = %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "0", "-1", "x", "4,a"} {
		if _, err := parseWorkers(bad); err == nil {
			t.Errorf("parseWorkers(%q) should fail", bad)
		}
	}
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.duration != 20*time.Second || cfg.runs != 3 || cfg.proxies != 3 || cfg.out != "bench/results" ||
		!slices.Equal(cfg.workers, []int{1, 4, 16, 64}) || cfg.stmtTimeout != time.Second || cfg.faultWorkers != 16 || cfg.turns != 5 {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = parseFlags([]string{"-duration", "2s", "-runs", "1", "-workers", "1,4"})
	if err != nil || cfg.duration != 2*time.Second || cfg.runs != 1 || !slices.Equal(cfg.workers, []int{1, 4}) {
		t.Errorf("smoke flags: %+v, %v", cfg, err)
	}
	for _, bad := range [][]string{{"-runs", "0"}, {"-proxies", "1"}, {"-duration", "0s"}, {"-workers", "0"}, {"-turns", "0"}, {"-duration", "1s", "-turns", "20"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%v) should fail", bad)
		}
	}
}

func TestCDFWorkers(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want int
	}{
		{[]int{1, 4, 16, 64}, 16},
		{[]int{1, 4}, 4},
		{[]int{64, 32}, 32},
		{[]int{8, 2, 32}, 8},
	} {
		if got := cdfWorkers(tc.in); got != tc.want {
			t.Errorf("cdfWorkers(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestNumJSON(t *testing.T) {
	raw, err := json.Marshal([]num{1.5, num(math.NaN()), num(math.Inf(1))})
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `[1.5,null,"inf"]` {
		t.Errorf("got %s", raw)
	}
}

func TestBehindText(t *testing.T) {
	r := &results{
		Config:  config{workers: []int{16}},
		Targets: []target{{Key: "direct", Label: "direct"}, {Key: "haproxy", Label: "HAProxy"}, {Key: "lbd", Label: "lbd"}},
		Phases: []phaseResult{
			{Target: "direct", Workers: 16, Throughput: 1000, P99: 1, P999: 2, Statements: 1000, ClientCPU: 1, ShareCV: 1.41},
			{Target: "haproxy", Workers: 16, Throughput: 1000, P99: 1, P999: 2, Statements: 1000, ClientCPU: 1, ShareCV: 0.01},
			{Target: "lbd", Workers: 16, Throughput: 900, P99: 1.5, P999: 2, Statements: 1000, ClientCPU: 1, ShareCV: 0.2},
		},
	}
	got := behindText(r)
	for _, want := range []string{"against HAProxy: 10 % fewer statements/s", "p99 1.50 ms vs 1.00 ms", "share CV 20.0 % vs 1.0 %", "against direct: 10 % fewer"} {
		if !strings.Contains(got, want) {
			t.Errorf("behind text lacks %q:\n%s", want, got)
		}
	}
	for line := range strings.SplitSeq(got, "\n") {
		if strings.Contains(line, "against direct") && strings.Contains(line, "share CV") {
			t.Errorf("share CV must not be compared with the single-proxy setup: %s", line)
		}
	}
	r.Phases[2] = phaseResult{Target: "lbd", Workers: 16, Throughput: 990, P99: 1.05, P999: 2, Statements: 1000, ClientCPU: 1, ShareCV: 0.02}
	if got := behindText(r); !strings.Contains(got, "not behind") {
		t.Errorf("within noise should say so:\n%s", got)
	}
}

func TestBehindTextCountsRuns(t *testing.T) {
	r := &results{
		Config:  config{workers: []int{4}, runs: 3},
		Targets: []target{{Key: "haproxy", Label: "HAProxy"}, {Key: "lbd", Label: "lbd"}},
	}
	// lbd is slower in runs 1 and 2 only; the medians still show it 10 % behind.
	for run, tp := range map[int][2]float64{1: {900, 1000}, 2: {900, 1000}, 3: {1100, 1000}} {
		for i, key := range []string{"lbd", "haproxy"} {
			r.Phases = append(r.Phases, phaseResult{Target: key, Workers: 4, Run: run, Throughput: tp[i], P99: 1, P999: 2, Statements: 1000, ClientCPU: 1})
		}
	}
	got := behindText(r)
	if !strings.Contains(got, "10 % fewer statements/s (900 vs 1000) [2 of 3 runs]") {
		t.Errorf("expected a finding held in 2 of 3 runs:\n%s", got)
	}
}

func TestTurnsAddUp(t *testing.T) {
	var p phaseResult
	p.add(phaseResult{Target: "lbd", Workers: 4, Run: 1, Seconds: 2, Statements: 300, Errors: 1, ClientCPU: 0.5,
		Mallocs: 30, PerProxy: []int64{100, 200, 0}, Conns: []int{1, 3, 0}, ErrorSamples: map[string]int{"x": 1},
		Markdowns: []string{"stall: a"}, lat: []float64{3, 1, 2}})
	p.add(phaseResult{Target: "lbd", Workers: 4, Run: 1, Seconds: 2, Statements: 100, ClientCPU: 0.25,
		Mallocs: 10, PerProxy: []int64{0, 0, 100}, Conns: []int{2, 2, 0}, ErrorSamples: map[string]int{"x": 2, "y": 1},
		lat: []float64{4}})
	p.finish(false)
	if p.Seconds != 4 || p.Statements != 400 || p.Errors != 1 || p.Throughput != 100 || p.ClientCPU != 0.75 || p.Mallocs != 40 {
		t.Errorf("sums: %+v", p)
	}
	if !slices.Equal(p.PerProxy, []int64{100, 200, 100}) || !slices.Equal(p.Conns, []int{2, 2, 0}) {
		t.Errorf("per proxy %v, conns %v: want the sums and the last turn's connections", p.PerProxy, p.Conns)
	}
	if p.ErrorSamples["x"] != 3 || p.ErrorSamples["y"] != 1 || len(p.Markdowns) != 1 {
		t.Errorf("samples %v, markdowns %v", p.ErrorSamples, p.Markdowns)
	}
	// Percentiles over the pooled latencies of both turns: 1, 2, 3, 4.
	if p.P50 != 2 || p.P99 != 4 || p.lat != nil {
		t.Errorf("p50 %v, p99 %v, latencies kept %v", p.P50, p.P99, p.lat)
	}
	if !slices.Equal(p.TurnRates, []num{150, 50}) || !slices.Equal(p.TurnCPU, []num{0.5 / 300 * 1e6, 2500}) {
		t.Errorf("turn rates %v, turn CPU %v", p.TurnRates, p.TurnCPU)
	}
	if want := cv([]float64{100, 200, 100}); float64(p.ShareCV) != want {
		t.Errorf("share CV %v, want %v", p.ShareCV, want)
	}
	// A turn in which every statement failed has no CPU per statement; results.json must still
	// be written.
	p.add(phaseResult{Target: "lbd", Seconds: 2, PerProxy: []int64{0, 0, 0}})
	if _, err := json.Marshal(p); err != nil {
		t.Errorf("a turn without statements: %v", err)
	}
}

func TestPairedRatios(t *testing.T) {
	r := &results{
		Config:  config{workers: []int{16}, runs: 3},
		Targets: []target{{Key: "direct", Label: "direct"}, {Key: "lbd", Label: "lbd"}},
	}
	// Run 2 is slow for both setups: paired, lbd is at 0.9, 1.0 and 1.1 of direct.
	for run, tp := range map[int][2]float64{1: {900, 1000}, 2: {500, 500}, 3: {1100, 1000}} {
		for i, key := range []string{"lbd", "direct"} {
			r.Phases = append(r.Phases, phaseResult{Target: key, Workers: 16, Run: run, Throughput: tp[i], Statements: int64(tp[i]), ClientCPU: 1})
		}
	}
	got := pairedText(r)
	if !strings.Contains(got, "| 16 | direct | 1.00 (0.90–1.10) | 1.00 (0.91–1.11) |") {
		t.Errorf("paired ratios:\n%s", got)
	}
}

func TestPairedNoiseFloor(t *testing.T) {
	r := &results{
		Config:  config{workers: []int{1}, runs: 2},
		Targets: []target{{Key: "direct", Label: "direct"}, {Key: controlKey, Label: "direct again"}, {Key: "lbd", Label: "lbd"}},
	}
	for run, tp := range map[int][3]float64{1: {1000, 900, 950}, 2: {1000, 1100, 1000}} {
		for i, key := range []string{"direct", controlKey, "lbd"} {
			r.Phases = append(r.Phases, phaseResult{Target: key, Workers: 1, Run: run, Throughput: tp[i], Statements: int64(tp[i]), ClientCPU: 1})
		}
	}
	got := pairedText(r)
	if !strings.Contains(got, "Noise floor at 1 worker: the second direct setup, identical to the first, measured 1.00 (0.90–1.10)") {
		t.Errorf("noise floor:\n%s", got)
	}
}
