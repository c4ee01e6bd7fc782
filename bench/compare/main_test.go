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
		!slices.Equal(cfg.workers, []int{1, 4, 16, 64}) || cfg.stmtTimeout != time.Second || cfg.faultWorkers != 16 {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = parseFlags([]string{"-duration", "2s", "-runs", "1", "-workers", "1,4"})
	if err != nil || cfg.duration != 2*time.Second || cfg.runs != 1 || !slices.Equal(cfg.workers, []int{1, 4}) {
		t.Errorf("smoke flags: %+v, %v", cfg, err)
	}
	for _, bad := range [][]string{{"-runs", "0"}, {"-proxies", "1"}, {"-duration", "0s"}, {"-workers", "0"}} {
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
