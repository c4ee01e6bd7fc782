package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lbd-go/lbd"
)

// num is a float64 that JSON-encodes NaN as null and +Inf as the string "inf".
type num float64

// MarshalJSON implements json.Marshaler.
func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte("null"), nil
	case math.IsInf(f, 1):
		return []byte(`"inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-inf"`), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// phaseResult is one measured window of one setup at one worker count.
type phaseResult struct {
	Target       string         `json:"target"`                  // the setup's key
	Workers      int            `json:"workers"`                 // concurrent workers
	Run          int            `json:"run"`                     // 1-based repetition
	Seconds      float64        `json:"seconds"`                 // length of the measured window
	Statements   int64          `json:"statements_ok"`           // successes ending in the window
	Errors       int64          `json:"errors"`                  // failures ending in the window
	Throughput   float64        `json:"statements_per_second"`   // Statements / Seconds
	P50          num            `json:"p50_ms"`                  // latency percentiles, milliseconds
	P99          num            `json:"p99_ms"`                  // milliseconds
	P999         num            `json:"p999_ms"`                 // milliseconds
	ClientCPU    float64        `json:"client_cpu_s"`            // this process's CPU over the window
	HAProxyCPU   float64        `json:"haproxy_cpu_s"`           // HAProxy's CPU over the window (its setup only)
	Mallocs      uint64         `json:"mallocs"`                 // heap objects this process allocated over the window
	PerProxy     []int64        `json:"per_proxy_statements"`    // statements each proxy received
	ShareCV      num            `json:"share_cv"`                // coefficient of variation of PerProxy
	Conns        []int          `json:"conns_per_proxy_at_end"`  // connections per proxy at the window's end
	ErrorSamples map[string]int `json:"error_samples,omitempty"` // a few error texts and their counts
	// Markdowns are the proxies lbd took down during the phase, warm-up included, each as
	// "cause: reason" (lbd setups only): under steady load with every proxy healthy, any is a
	// false alarm.
	Markdowns []string `json:"lbd_markdowns,omitempty"`
	// TurnRates and TurnCPU are each turn's statements/s and CPU µs per statement, in the
	// order the turns ran: a turn far off the others is the machine, not the setup.
	TurnRates []num `json:"turn_statements_per_second"`
	TurnCPU   []num `json:"turn_cpu_us_per_statement"`

	lat []float64 // sorted latencies in ms, kept only for the CDF chart
}

// add sums the turn q into p, which starts as the zero phaseResult: counts, times and CPU add
// up, latencies are pooled, and the connections are the last turn's.
func (p *phaseResult) add(q phaseResult) {
	if p.Target == "" {
		p.Target, p.Workers, p.Run = q.Target, q.Workers, q.Run
		p.PerProxy = make([]int64, len(q.PerProxy))
	}
	p.TurnRates = append(p.TurnRates, num(float64(q.Statements)/q.Seconds))
	p.TurnCPU = append(p.TurnCPU, num(q.cpuPerStmt()))
	p.Seconds += q.Seconds
	p.Statements += q.Statements
	p.Errors += q.Errors
	p.ClientCPU += q.ClientCPU
	p.HAProxyCPU += q.HAProxyCPU
	p.Mallocs += q.Mallocs
	for i := range p.PerProxy {
		p.PerProxy[i] += q.PerProxy[i]
	}
	p.Conns = q.Conns
	p.Markdowns = append(p.Markdowns, q.Markdowns...)
	if p.ErrorSamples == nil {
		p.ErrorSamples = map[string]int{}
	}
	for k, v := range q.ErrorSamples {
		p.ErrorSamples[k] += v
	}
	p.lat = append(p.lat, q.lat...)
}

// finish derives the rates, percentiles and share spread from the sums; the latencies are kept
// (sorted) only with keepLat, for the CDF chart.
func (p *phaseResult) finish(keepLat bool) {
	slices.Sort(p.lat)
	if p.Seconds > 0 {
		p.Throughput = float64(p.Statements) / p.Seconds
	}
	p.P50, p.P99, p.P999 = num(percentile(p.lat, 50)), num(percentile(p.lat, 99)), num(percentile(p.lat, 99.9))
	share := make([]float64, len(p.PerProxy))
	for i, n := range p.PerProxy {
		share[i] = float64(n)
	}
	p.ShareCV = num(cv(share))
	if !keepLat {
		p.lat = nil
	}
}

// mallocsPerStmt is the heap objects this process allocated per successful statement (the
// relays' included, the same for every setup).
func (p phaseResult) mallocsPerStmt() float64 {
	if p.Statements == 0 {
		return math.NaN()
	}
	return float64(p.Mallocs) / float64(p.Statements)
}

// cpuPerStmt is client plus HAProxy CPU per successful statement, in microseconds.
func (p phaseResult) cpuPerStmt() float64 {
	if p.Statements == 0 {
		return math.NaN()
	}
	return (p.ClientCPU + p.HAProxyCPU) / float64(p.Statements) * 1e6
}

// results is everything one invocation measured.
type results struct {
	Began       time.Time     // start of the invocation
	Took        time.Duration // its whole length
	Config      config        // the flags
	Backend     backendInfo   // the database behind the proxies
	HAProxy     haproxyInfo   // how HAProxy was run, or why not
	Targets     []target      // setups of the load phases
	FaultTarget []target      // setups of the fault phase
	FaultTiming faultTiming   // lengths of the fault phase's parts
	Warmup      time.Duration // unmeasured start of every turn of a load phase
	Phases      []phaseResult // every load phase of every run
	Faults      []faultResult // every fault phase of every run
}

// summary is the median over runs of one setup at one worker count.
type summary struct {
	Target                        string  // the setup's key
	Workers                       int     // concurrent workers
	Runs                          int     // runs the medians are taken over
	Throughput, P50, P99, P999    float64 // statements/s and latency percentiles (ms)
	MinTput, MaxTput              float64 // range of statements/s over the runs
	ClientCPU, HAProxyCPU, CPUPer float64 // seconds, seconds, microseconds per statement
	CV                            float64 // share coefficient of variation
	Errors                        int64   // summed over runs
	Conns                         []int   // from the last run
}

// summarise returns the median figures of target at workers, and false when nothing was
// measured.
func (r *results) summarise(target string, workers int) (summary, bool) {
	var ps []phaseResult
	for _, p := range r.Phases {
		if p.Target == target && p.Workers == workers {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return summary{}, false
	}
	pick := func(f func(phaseResult) float64) float64 {
		vs := make([]float64, len(ps))
		for i, p := range ps {
			vs[i] = f(p)
		}
		return median(vs)
	}
	s := summary{
		Target:     target,
		Workers:    workers,
		Runs:       len(ps),
		Throughput: pick(func(p phaseResult) float64 { return p.Throughput }),
		P50:        pick(func(p phaseResult) float64 { return float64(p.P50) }),
		P99:        pick(func(p phaseResult) float64 { return float64(p.P99) }),
		P999:       pick(func(p phaseResult) float64 { return float64(p.P999) }),
		ClientCPU:  pick(func(p phaseResult) float64 { return p.ClientCPU }),
		HAProxyCPU: pick(func(p phaseResult) float64 { return p.HAProxyCPU }),
		CPUPer:     pick(func(p phaseResult) float64 { return p.cpuPerStmt() }),
		CV:         pick(func(p phaseResult) float64 { return float64(p.ShareCV) }),
		Conns:      ps[len(ps)-1].Conns,
	}
	s.MinTput, s.MaxTput = math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		s.Errors += p.Errors
		s.MinTput = min(s.MinTput, p.Throughput)
		s.MaxTput = max(s.MaxTput, p.Throughput)
	}
	return s, true
}

// faultSummary is the median over runs of one fault-phase setup.
type faultSummary struct {
	Target                                           string  // the setup's key
	Runs                                             int     // runs the medians are taken over
	Errors, Timeouts, Other                          float64 // failed statements
	InFlight, StartedHung                            float64 // failed statements in flight at the hang / started into it
	CounterStop, LastFailed, MarkedDown, BackUp, Rec float64 // seconds, as in faultResult
	Watch                                            float64 // shortest watch over the runs
	RecoveredRuns                                    int     // runs in which the proxy recovered
}

func (r *results) summariseFault(target string) (faultSummary, bool) {
	var fs []faultResult
	for _, f := range r.Faults {
		if f.Target == target {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return faultSummary{}, false
	}
	pick := func(f func(faultResult) float64) float64 {
		vs := make([]float64, len(fs))
		for i, x := range fs {
			vs[i] = f(x)
		}
		return median(vs)
	}
	s := faultSummary{
		Target:      target,
		Runs:        len(fs),
		Errors:      pick(func(f faultResult) float64 { return float64(f.Errors) }),
		Timeouts:    pick(func(f faultResult) float64 { return float64(f.Timeouts) }),
		Other:       pick(func(f faultResult) float64 { return float64(f.OtherErrors) }),
		InFlight:    pick(func(f faultResult) float64 { return float64(f.InFlight) }),
		StartedHung: pick(func(f faultResult) float64 { return float64(f.StartedHung) }),
		CounterStop: pick(func(f faultResult) float64 { return float64(f.CounterStop) }),
		LastFailed:  pick(func(f faultResult) float64 { return float64(f.LastFailed) }),
		MarkedDown:  pick(func(f faultResult) float64 { return float64(f.MarkedDown) }),
		BackUp:      pick(func(f faultResult) float64 { return float64(f.BackUp) }),
		Rec:         pick(func(f faultResult) float64 { return float64(f.Recovered) }),
		Watch:       math.Inf(1),
	}
	for _, f := range fs {
		s.Watch = min(s.Watch, f.Watch)
		if !math.IsInf(float64(f.Recovered), 1) {
			s.RecoveredRuns++
		}
	}
	return s, true
}

// Formatting helpers.

func fmtMs[T ~float64](v T) string {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return "–"
	case f < 1:
		return strconv.FormatFloat(f, 'f', 3, 64)
	case f < 10:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

func fmtPct[T ~float64](v T) string {
	f := float64(v)
	if math.IsNaN(f) {
		return "–"
	}
	return strconv.FormatFloat(f*100, 'f', 1, 64) + " %"
}

func fmtSec[T ~float64](v T) string {
	f := float64(v)
	switch {
	case math.IsNaN(f):
		return "–"
	case math.IsInf(f, 1):
		return "never"
	}
	return strconv.FormatFloat(f, 'f', 2, 64) + " s"
}

func fmtRecovered[T ~float64](v T, watch float64) string {
	if math.IsInf(float64(v), 1) {
		return fmt.Sprintf("not within %.0f s", watch)
	}
	return fmtSec(v)
}

func fmtRate(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// fmtRateRange is the median statements/s and, over several runs, their range.
func fmtRateRange(s summary) string {
	if s.Runs < 2 {
		return fmtRate(s.Throughput)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtRate(s.Throughput), fmtRate(s.MinTput), fmtRate(s.MaxTput))
}

func joinInts(vs []int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, "/")
}

// cpuModel returns the CPU model named in /proc/cpuinfo, or "".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// labelOf returns the report label of the setup with key in ts.
func labelOf(ts []target, key string) string {
	for _, t := range ts {
		if t.Key == key {
			return t.Label
		}
	}
	return key
}

// writeFileAtomic writes data to path through a temporary file in the same directory.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeReport writes README.md and results.json into dir.
func writeReport(dir string, r *results) error {
	raw, err := json.MarshalIndent(struct {
		Phases []phaseResult `json:"phases"`
		Faults []faultResult `json:"faults"`
	}{r.Phases, r.Faults}, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "results.json"), append(raw, '\n')); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, "README.md"), []byte(renderReadme(r)))
}

// commandLine reconstructs the flags of this run, for the report.
func commandLine(c config) string {
	ws := make([]string, len(c.workers))
	for i, w := range c.workers {
		ws[i] = strconv.Itoa(w)
	}
	s := fmt.Sprintf("go run ./bench/compare -duration %s -turns %d -runs %d -workers %s -proxies %d", c.duration, c.turns, c.runs, strings.Join(ws, ","), c.proxies)
	if c.control {
		s += " -control"
	}
	if c.mysqlDSN != "" {
		s += " -mysql-dsn '<dsn>'"
	}
	return s
}

func renderReadme(r *results) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	cfg := r.Config

	w("# lbd compared with a direct connection and with HAProxy\n\n")
	w("Written by `%s`; run it again rather than editing this file. ", commandLine(cfg))
	w("Raw per-run figures are in [results.json](results.json).\n\n")

	model := cpuModel()
	if model == "" {
		model = "CPU model unknown"
	}
	ha := r.HAProxy.Version + "; " + r.HAProxy.Check
	if r.HAProxy.Missing != "" {
		ha = "not part of this run: " + r.HAProxy.Missing
	}
	w("| | |\n|---|---|\n")
	w("| date | %s |\n", r.Began.UTC().Format("2006-01-02 15:04 UTC"))
	w("| machine | %d CPUs, %s/%s, %s |\n", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, model)
	w("| Go | %s |\n", runtime.Version())
	w("| runs | %d; every figure below is the median over the runs |\n", cfg.runs)
	w("| load phases | %s measured per setup and worker count, in %d turns of %s each after %s of warm-up on a new pool; the setups take turns, the first rotating |\n",
		cfg.duration, cfg.turns, cfg.duration/time.Duration(cfg.turns), r.Warmup)
	w("| backend | %s |\n", r.Backend.Desc)
	w("| proxies | %d lbdtest relays on loopback, inside the measuring process |\n", cfg.proxies)
	w("| HAProxy | %s |\n", ha)
	w("| lbd | steady load: DSN defaults (probe every 5 s, 3 s probe timeout, rebalance every 10 s, passive outlier detection with `maxEjectionPercent=10`); turns among equally loaded proxies start at the first, the one the direct setup uses |\n")
	w("| pool | `SetMaxOpenConns(workers)`, `SetMaxIdleConns(workers)`, no lifetime or idle limit, a new pool per turn |\n")
	w("| client | go-sql-driver with `%s`; every statement under a %s context deadline |\n", clientParams, cfg.stmtTimeout)
	w("| workload | %d %% point selects by primary key (over %d rows), %d %% `SELECT 1`, %d %% single-row `INSERT … ON DUPLICATE KEY UPDATE` (over %d other keys, so the %d-row table never grows), on a table made for the run and dropped after |\n",
		pctPointSelect, readRows, pctSelectOne, 100-pctPointSelect-pctSelectOne, writeRows, prefillRows)
	w("| whole run took | %s |\n\n", r.Took.Round(time.Second))
	if r.HAProxy.CheckNote != "" {
		w("**HAProxy health check:** %s\n\n", r.HAProxy.CheckNote)
	}

	// Steady load.
	w("## Steady load\n\n")
	w("| setup | workers | statements/s | p50 ms | p99 ms | p99.9 ms | client CPU s | HAProxy CPU s | CPU µs/stmt | share CV | conns per proxy | errors |\n")
	w("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|\n")
	for _, wk := range cfg.workers {
		for _, t := range r.Targets {
			s, ok := r.summarise(t.Key, wk)
			if !ok {
				continue
			}
			hcpu := "–"
			if t.Key == "haproxy" {
				hcpu = strconv.FormatFloat(s.HAProxyCPU, 'f', 2, 64)
			}
			w("| %s | %d | %s | %s | %s | %s | %.2f | %s | %.1f | %s | %s | %d |\n",
				t.Label, wk, fmtRateRange(s), fmtMs(s.P50), fmtMs(s.P99), fmtMs(s.P999),
				s.ClientCPU, hcpu, s.CPUPer, fmtPct(s.CV), joinInts(s.Conns), s.Errors)
		}
	}
	w("\n")
	w("- **statements/s** counts statements that succeeded inside the measured window (median, then the lowest and highest run); **latency** is per statement, from the call to its return, including any wait for a pooled connection.\n")
	w("- **client CPU s** is user+system time of the measuring process over the window (`getrusage(RUSAGE_SELF)` deltas). ")
	if r.Backend.External {
		w("That process also runs the lbdtest relays (the backend is out of process here), so every setup carries the same relay cost per statement. ")
	} else {
		w("That process also runs the lbdtest relays **and the in-memory backend**, so most of it is server work shared by every setup; pass `-mysql-dsn` to move the backend out of process. ")
	}
	w("**HAProxy CPU s** is HAProxy's own user+system time over the same window (from `/proc`), and **CPU µs/stmt** is (client + HAProxy CPU) / statements.\n")
	w("- **share CV** is the coefficient of variation (population standard deviation / mean) of the statements each proxy received in the window, from the proxies' counters: 0 is a perfectly even spread; one proxy taking everything of %d gives %.0f %%. lbd's own probes (one statement per proxy per probe) are included and negligible.\n",
		cfg.proxies, 100*math.Sqrt(float64(cfg.proxies-1)))
	w("- **conns per proxy** is the application connections per proxy at the end of the last run's window (lbd: from `Connector.Stats`, without lbd's probe connection; otherwise from the proxies' counters).\n")
	w("- %s\n\n", falseAlarms(r))

	// Fault phase.
	if len(r.Faults) > 0 {
		ft := r.FaultTiming
		w("## One proxy hung under load\n\n")
		w("%d workers run the same workload; after %s proxy %d is hung (`Proxy.Hang`: TCP still accepted, no byte flows either way) for %s, then resumed; recovery is watched for up to %s.\n\n",
			cfg.faultWorkers, ft.Warm, hungProxy, ft.Hang, ft.Watch)
		w("| setup | errors (timeouts / other) | failed: in flight at the hang / started after it | counter quiet after | last failed statement started | taken out after | back in rotation after resume | recovered after resume |\n")
		w("|---|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, t := range r.FaultTarget {
			s, ok := r.summariseFault(t.Key)
			if !ok {
				continue
			}
			rec := fmtSec(s.Rec)
			if math.IsInf(s.Rec, 1) {
				rec = fmt.Sprintf("not within %.0f s", s.Watch)
			}
			if s.RecoveredRuns < s.Runs && s.RecoveredRuns > 0 {
				rec += fmt.Sprintf(" (%d of %d runs recovered)", s.RecoveredRuns, s.Runs)
			}
			w("| %s | %.0f (%.0f / %.0f) | %.0f / %.0f | %s | %s | %s | %s | %s |\n",
				t.Label, s.Errors, s.Timeouts, s.Other, s.InFlight, s.StartedHung, fmtSec(s.CounterStop), fmtSec(s.LastFailed),
				fmtSec(s.MarkedDown), fmtSec(s.BackUp), rec)
		}
		w("\n")
		if l, ok := r.summariseFault("lbd"); ok {
			if h, ok := r.summariseFault("haproxy"); ok {
				w("At its defaults lbd took the hung proxy out after %s, HAProxy with its 200 ms checks after %s; %.0f statements failed with lbd, %.0f of them already in flight when the proxy hung, and %.0f with HAProxy, %.0f of them in flight (medians over %d runs). lbd put the proxy back in rotation %s after the resume, HAProxy %s: lbd's recovery waits for %d good probes 250 ms apart on the schedule it probes a down proxy by, HAProxy's for 2 checks 200 ms apart.\n\n",
					fmtSec(l.MarkedDown), fmtSec(h.MarkedDown), l.Errors, l.InFlight, h.Errors, h.InFlight, l.Runs,
					fmtSec(l.BackUp), fmtSec(h.BackUp), lbd.DefaultRecoverCheckCount)
			}
		}
		for _, t := range r.FaultTarget {
			var last *faultResult
			for i := range r.Faults {
				if r.Faults[i].Target == t.Key {
					last = &r.Faults[i]
				}
			}
			if last == nil || last.LBDNode == nil {
				continue
			}
			n := last.LBDNode
			w("%s, lbd's own counters for the hung proxy over the last run's fault phase: %d dials, %d failed dials, %d connections retired, %d fatal errors, %d passive signals, %d state changes, %d probes of which %d failed.",
				t.Label, n.Dials, n.DialFailures, n.Retired, n.FatalErrors, n.PassiveSignals, n.Transitions, n.Probes, n.ProbeFailures)
			if n.DownCause != "" {
				w(" It was taken out by cause `%s`: %s.", n.DownCause, n.DownReason)
			}
			if n.DialFailures == 0 && last.Timeouts > int64(cfg.faultWorkers/cfg.proxies+1) {
				w(" No dial was counted as failed although %d statements timed out: a connection attempt to the hung proxy that runs into the caller's deadline is not held against it (lbd reads an expired caller context as saying nothing about the node), so with a statement deadline no longer than the DSN's `timeout` the two-failed-dials rule cannot fire and only a failed probe (scheduled, or brought forward by a passive signal) takes the proxy out.", last.Timeouts)
			}
			w("\n\n")
		}
		w("- **errors**: statements that failed during the whole fault phase; a timeout is the %s per-statement deadline passing. Median over runs.\n", cfg.stmtTimeout)
		w("- **failed: in flight at the hang / started after it**: of the failures caused by the hang (as in the next column but one), those of statements already on the wire or waiting for a connection when the proxy hung, which no balancer can save, and those started later, which a balancer that takes the proxy out at once would not have sent there. Median over runs of each.\n")
		w("- **counter quiet after**: the proxy's statement counter is read every %s; traffic has stopped at the first reading after the hang from which the counter does not move for %.0f s. ", sampleEvery, quietFor)
		w("Caveat: a hung lbdtest proxy counts a statement when it reads it, before forwarding, and each stalled connection sends at most one statement; new connections to it never get the server greeting and so never send any. The counter therefore goes quiet almost at once for every setup, and this column mostly shows that no statement kept reaching it — it cannot show connection attempts that stall in the handshake. lbd's probe (`/* ping */ SELECT 1`) is a statement too: one probe sent on the probe connection shortly after the hang moves the counter once more.\n")
		w("- **last failed statement started**: how long after the hang the last statement that failed because of it was started (a failure ending after the hang of a statement started before the resume; statements already in flight at the hang count as 0 s). The other proxies are healthy, so every such failure is a statement or a connection attempt that went to the hung proxy: this is the client-side view of when traffic stopped going there.\n")
		w("- **taken out after**: when the balancer stopped offering the proxy for new connections, read every %s: lbd's `Stats` state leaving `up`; HAProxy's server status (admin socket `show stat`) becoming `DOWN`. **back in rotation**: the reverse after the resume.\n", sampleEvery)
		w("- **recovered after resume**: the end of the first sliding %.0f s window, wholly after the resume, in which the proxy received at least %.0f %% of its fair share (total statements / %d) according to its counter. ", recoverWindow, recoverFraction*100, cfg.proxies)
		w("A pool of long-lived connections only moves to a returning proxy when something closes connections: lbd's rebalancer does; HAProxy balances only when a TCP connection opens, and this pool (no `ConnMaxLifetime`) opens none while the load is steady.\n\n")
	}

	w("## lbd against the others, run by run\n\n")
	w("%s\n", pairedText(r))
	w("## Where lbd is behind\n\n")
	w("%s\n\n", behindText(r))

	w("## Charts\n\n")
	cw := cdfWorkers(cfg.workers)
	w("Latency CDF at %s, all runs pooled (log scale):\n\n![latency CDF](%s)\n\n", workersText(cw), cdfFile)
	w("The same latencies as percentiles, to show the tail:\n\n![latency tail](%s)\n\n", tailFile)
	for _, t := range r.FaultTarget {
		if !r.hasFault(t.Key) {
			continue
		}
		src := "the proxies' `OpenConns`"
		if t.Key != "haproxy" {
			src = "lbd's `Connector.Stats`"
		}
		note := ""
		if t.Key == "haproxy" {
			note = " These counters include HAProxy's own check connections: the short spikes are checks, and the comb on the hung proxy is one check every 200 ms held until it times out."
		} else {
			note = " lbd counts a dial in progress as open, so connection attempts stalled on the hung proxy show here until lbd takes it out."
		}
		w("Connections per proxy during the fault phase, %s (last run; from %s).%s\n\n![%s](%s)\n\n", t.Label, src, note, t.Key, faultFile(t.Key))
	}

	if r.HAProxy.Config != "" {
		w("## HAProxy configuration\n\nWritten to a temporary directory and run in the foreground (`haproxy -db -f haproxy.cfg`); its ports and socket path change every run and are shown as placeholders.\n\n```\n%s```\n\n", r.HAProxy.Config)
		w("`option mysql-check` logs in as a user without a password and quits. The in-memory backend accepts any user. On MariaDB/MySQL the check user must exist: root with an empty password works on a test box; otherwise `CREATE USER 'haproxy'@'127.0.0.1';` (no privileges needed) and pass `-haproxy-check-user haproxy`. When the check user cannot log in, the harness falls back to a plain TCP check and says so above.\n")
	}
	w("\n## Scale-out\n\nA proxy joining a busy pool, with and without slow start, runs on its own (`-only scaleout`): see [%s](%s).\n", scaleOutFile, scaleOutFile)
	return b.String()
}

func (r *results) hasFault(key string) bool {
	return slices.ContainsFunc(r.Faults, func(f faultResult) bool { return f.Target == key })
}

// Noise margins of the "where lbd is behind" section.
const (
	behindThroughput = 0.03 // lbd's statements/s lower by more than 3 %
	behindLatency    = 0.10 // lbd's p99 higher by more than 10 % ...
	behindLatencyAbs = 0.02 // ... and by more than 20 µs
	behindCPU        = 0.05 // lbd's CPU per statement higher by more than 5 %
	behindCV         = 0.05 // lbd's share CV higher by more than 5 points
)

// loadFigures are the steady-load figures the "behind" rules compare.
type loadFigures struct{ tput, p99, p999, cpu, cv float64 }

func (s summary) figures() loadFigures {
	return loadFigures{s.Throughput, s.P99, s.P999, s.CPUPer, s.CV}
}

func (p phaseResult) figures() loadFigures {
	return loadFigures{p.Throughput, float64(p.P99), float64(p.P999), p.cpuPerStmt(), float64(p.ShareCV)}
}

// loadChecks are the steady-load rules: when worse(lbd, other) holds, text describes it.
var loadChecks = []struct {
	spreadOnly bool // compares the spread over proxies: meaningless against a single proxy
	worse      func(l, o loadFigures) bool
	text       func(l, o loadFigures) string
}{
	{false,
		func(l, o loadFigures) bool { return l.tput < o.tput*(1-behindThroughput) },
		func(l, o loadFigures) string {
			return fmt.Sprintf("%.0f %% fewer statements/s (%s vs %s)", 100*(1-l.tput/o.tput), fmtRate(l.tput), fmtRate(o.tput))
		}},
	{false,
		func(l, o loadFigures) bool { return l.p99 > o.p99*(1+behindLatency) && l.p99-o.p99 > behindLatencyAbs },
		func(l, o loadFigures) string { return fmt.Sprintf("p99 %s ms vs %s ms", fmtMs(l.p99), fmtMs(o.p99)) }},
	{false,
		func(l, o loadFigures) bool {
			return l.p999 > o.p999*(1+behindLatency) && l.p999-o.p999 > behindLatencyAbs
		},
		func(l, o loadFigures) string {
			return fmt.Sprintf("p99.9 %s ms vs %s ms", fmtMs(l.p999), fmtMs(o.p999))
		}},
	{false,
		func(l, o loadFigures) bool { return l.cpu > o.cpu*(1+behindCPU) },
		func(l, o loadFigures) string {
			return fmt.Sprintf("%.0f %% more CPU per statement (%.1f vs %.1f µs)", 100*(l.cpu/o.cpu-1), l.cpu, o.cpu)
		}},
	{true,
		func(l, o loadFigures) bool { return !math.IsNaN(l.cv) && !math.IsNaN(o.cv) && l.cv > o.cv+behindCV },
		func(l, o loadFigures) string {
			return fmt.Sprintf("a less even spread over the proxies (share CV %s vs %s)", fmtPct(l.cv), fmtPct(o.cv))
		}},
}

// faultFigures are the fault-phase figures the "behind" rules compare.
type faultFigures struct{ errors, down, lastFailed, backUp, rec float64 }

func (s faultSummary) figures() faultFigures {
	return faultFigures{s.Errors, s.MarkedDown, s.LastFailed, s.BackUp, s.Rec}
}

func (f faultResult) figures() faultFigures {
	return faultFigures{float64(f.Errors), float64(f.MarkedDown), float64(f.LastFailed), float64(f.BackUp), float64(f.Recovered)}
}

// faultChecks are the fault-phase rules.
var faultChecks = []struct {
	worse func(l, o faultFigures) bool
	text  func(l, o faultFigures) string
}{
	{func(l, o faultFigures) bool { return l.errors > o.errors*1.1 && l.errors-o.errors >= 5 },
		func(l, o faultFigures) string {
			return fmt.Sprintf("%.0f failed statements vs %.0f", l.errors, o.errors)
		}},
	{func(l, o faultFigures) bool { return later(l.down, o.down) },
		func(l, o faultFigures) string {
			return fmt.Sprintf("took the hung proxy out after %s vs %s", fmtSec(l.down), fmtSec(o.down))
		}},
	{func(l, o faultFigures) bool { return later(l.lastFailed, o.lastFailed) },
		func(l, o faultFigures) string {
			return fmt.Sprintf("statements kept failing until %s after the hang vs %s", fmtSec(l.lastFailed), fmtSec(o.lastFailed))
		}},
	{func(l, o faultFigures) bool { return later(l.backUp, o.backUp) },
		func(l, o faultFigures) string {
			return fmt.Sprintf("put it back in rotation %s after the resume vs %s", fmtSec(l.backUp), fmtSec(o.backUp))
		}},
	{func(l, o faultFigures) bool { return later(l.rec, o.rec) },
		func(l, o faultFigures) string {
			return fmt.Sprintf("recovered its share %s after the resume vs %s", fmtSec(l.rec), fmtSec(o.rec))
		}},
}

// runsNote says in how many paired runs a rule held, when there was more than one run.
func runsNote(k, n int) string {
	if n < 2 {
		return ""
	}
	return fmt.Sprintf(" [%d of %d runs]", k, n)
}

// phaseOf returns the phase of target at workers in run.
func (r *results) phaseOf(target string, workers, run int) (phaseResult, bool) {
	for _, p := range r.Phases {
		if p.Target == target && p.Workers == workers && p.Run == run {
			return p, true
		}
	}
	return phaseResult{}, false
}

// faultOf returns the fault phase of target in run.
func (r *results) faultOf(target string, run int) (faultResult, bool) {
	for _, f := range r.Faults {
		if f.Target == target && f.Run == run {
			return f, true
		}
	}
	return faultResult{}, false
}

// behindText lists, from the medians, every figure where lbd does worse than another setup by
// more than the noise margins, each with the number of runs in which the same held run by run.
func behindText(r *results) string {
	var lines []string
	others := []string{}
	for _, t := range r.Targets {
		if t.Key != "lbd" {
			others = append(others, t.Key)
		}
	}
	runs := max(r.Config.runs, 1)
	for _, wk := range r.Config.workers {
		l, ok := r.summarise("lbd", wk)
		if !ok {
			continue
		}
		for _, o := range others {
			s, ok := r.summarise(o, wk)
			if !ok {
				continue
			}
			var parts []string
			for _, c := range loadChecks {
				if (c.spreadOnly && o == "direct") || !c.worse(l.figures(), s.figures()) {
					continue
				}
				k, n := 0, 0
				for run := 1; run <= runs; run++ {
					lp, ok1 := r.phaseOf("lbd", wk, run)
					op, ok2 := r.phaseOf(o, wk, run)
					if ok1 && ok2 {
						n++
						if c.worse(lp.figures(), op.figures()) {
							k++
						}
					}
				}
				parts = append(parts, c.text(l.figures(), s.figures())+runsNote(k, n))
			}
			if len(parts) > 0 {
				lines = append(lines, fmt.Sprintf("- %s, against %s: %s.", workersText(wk), labelOf(r.Targets, o), strings.Join(parts, "; ")))
			}
		}
	}
	if hs, ok := r.summariseFault("haproxy"); ok {
		for _, key := range []string{"lbd", "lbd-tuned"} {
			ls, ok := r.summariseFault(key)
			if !ok {
				continue
			}
			var parts []string
			for _, c := range faultChecks {
				if !c.worse(ls.figures(), hs.figures()) {
					continue
				}
				k, n := 0, 0
				for run := 1; run <= runs; run++ {
					lf, ok1 := r.faultOf(key, run)
					hf, ok2 := r.faultOf("haproxy", run)
					if ok1 && ok2 {
						n++
						if c.worse(lf.figures(), hf.figures()) {
							k++
						}
					}
				}
				parts = append(parts, c.text(ls.figures(), hs.figures())+runsNote(k, n))
			}
			if len(parts) > 0 {
				lines = append(lines, fmt.Sprintf("- Fault phase, %s against HAProxy: %s.", labelOf(r.FaultTarget, key), strings.Join(parts, "; ")))
			}
		}
	}
	lead := fmt.Sprintf("Generated from the medians above; differences under %.0f %% in throughput, %.0f %% (or %.0f µs) in latency, %.0f %% in CPU per statement and %.0f points in share CV are treated as noise. ",
		behindThroughput*100, behindLatency*100, behindLatencyAbs*1000, behindCPU*100, behindCV*100)
	if runs > 1 {
		lead += "[k of n runs] tells in how many runs, compared run by run, the same rule held: a finding that held in one run only is more likely noise from this shared machine than a property of lbd. "
	}
	if len(lines) == 0 {
		return lead + "By those margins lbd was not behind any other setup in any figure of this run."
	}
	return lead + "lbd was behind here:\n\n" + strings.Join(lines, "\n")
}

// workersText is "1 worker" or "n workers".
func workersText(n int) string {
	if n == 1 {
		return "1 worker"
	}
	return strconv.Itoa(n) + " workers"
}

// later reports whether a is meaningfully later than b (by more than 0.2 s); NaN never is, +Inf
// is later than any finite time.
func later(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	if math.IsInf(a, 1) {
		return !math.IsInf(b, 1)
	}
	return a > b+0.2
}

// falseAlarms says how often lbd took a healthy proxy down during the steady load phases, where
// every proxy is healthy, and why.
func falseAlarms(r *results) string {
	phases, by := 0, map[string]int{}
	var example string
	for _, p := range r.Phases {
		if p.Target != "lbd" {
			continue
		}
		phases++
		for _, m := range p.Markdowns {
			cause, _, _ := strings.Cut(m, ":")
			by[cause]++
			if example == "" {
				example = m
			}
		}
	}
	if len(by) == 0 {
		return fmt.Sprintf("**false alarms**: lbd took no proxy down in any of its %d steady load phases (every proxy is healthy there; passive outlier detection included).", phases)
	}
	causes := make([]string, 0, len(by))
	total := 0
	for c, n := range by {
		causes = append(causes, fmt.Sprintf("%d by `%s`", n, c))
		total += n
	}
	slices.Sort(causes)
	return fmt.Sprintf("**false alarms**: lbd took a healthy proxy down %d times over its %d steady load phases (%s); for example %s.",
		total, phases, strings.Join(causes, ", "), example)
}

// pairedText tabulates lbd's throughput and CPU per statement as ratios to each other setup's
// in the same run, whose turns alternated with lbd's: the median over runs of those paired
// ratios, then the lowest and highest. A ratio taken within one run cancels what the machine
// did to that run; the medians of the table above can pair a fast run of one setup with a slow
// run of another.
func pairedText(r *results) string {
	var b strings.Builder
	b.WriteString("| workers | against | statements/s, lbd / other | CPU µs/stmt, lbd / other |\n|--:|---|--:|--:|\n")
	rows := 0
	for _, wk := range r.Config.workers {
		for _, t := range r.Targets {
			if t.Key == "lbd" {
				continue
			}
			tput, cpu := r.pairedRatios("lbd", t.Key, wk)
			if len(tput) == 0 {
				continue
			}
			rows++
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", wk, t.Label, fmtRatioRange(tput), fmtRatioRange(cpu))
		}
	}
	if rows == 0 {
		return "No run measured lbd beside another setup.\n"
	}
	// With -control, the same ratio between two identical direct setups: how far apart this
	// machine puts setups that do not differ at all.
	for _, wk := range r.Config.workers {
		if tput, cpu := r.pairedRatios(controlKey, "direct", wk); len(tput) > 0 {
			fmt.Fprintf(&b, "\nNoise floor at %s: the second direct setup, identical to the first, measured %s of its statements/s and %s of its CPU per statement, run by run.\n",
				workersText(wk), fmtRatioRange(tput), fmtRatioRange(cpu))
		}
	}
	return b.String()
}

// pairedRatios returns, for every run in which both setups a and b answered statements at
// workers, a's throughput and CPU per statement as ratios to b's.
func (r *results) pairedRatios(a, b string, workers int) (tput, cpu []float64) {
	for run := 1; run <= max(r.Config.runs, 1); run++ {
		x, ok1 := r.phaseOf(a, workers, run)
		y, ok2 := r.phaseOf(b, workers, run)
		if ok1 && ok2 && x.Statements > 0 && y.Statements > 0 {
			tput = append(tput, x.Throughput/y.Throughput)
			cpu = append(cpu, x.cpuPerStmt()/y.cpuPerStmt())
		}
	}
	return tput, cpu
}

// fmtRatioRange formats the median of ratios, then their lowest and highest when they differ.
func fmtRatioRange(vs []float64) string {
	s := fmt.Sprintf("%.2f", median(vs))
	if len(vs) > 1 {
		s += fmt.Sprintf(" (%.2f–%.2f)", slices.Min(vs), slices.Max(vs))
	}
	return s
}
