package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/lbd-go/lbd"
)

// Fault phase rules; the report's definitions section states the same.
const (
	sampleEvery     = 50 * time.Millisecond // how often the proxies' counters are read
	quietFor        = 1.0                   // seconds without a new statement that count as "traffic stopped"
	recoverWindow   = 1.0                   // seconds of the sliding window of the recovery rule
	recoverFraction = 0.5                   // share of the fair rate the recovered proxy must reach
	hungProxy       = 1                     // index of the proxy that is hung
)

// faultTiming is how long each part of the fault phase lasts.
type faultTiming struct {
	Warm  time.Duration // steady load before the hang
	Hang  time.Duration // how long the proxy stays hung
	Watch time.Duration // longest wait for recovery after Resume
}

func clampDur(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }

// faultTimingFor scales the fault phase with -duration: at the default 20 s it is 5 s of warm
// load, a 10 s hang and up to 25 s of watching the recovery; a 2 s smoke run shrinks it to
// 0.5 s, 1 s and 2.5 s.
func faultTimingFor(d time.Duration) faultTiming {
	return faultTiming{
		Warm:  clampDur(d/4, 500*time.Millisecond, 5*time.Second),
		Hang:  clampDur(d/2, time.Second, 10*time.Second),
		Watch: clampDur(d*5/4, 2*time.Second, 25*time.Second),
	}
}

// faultSample is one reading of the cluster during the fault phase.
type faultSample struct {
	T     float64 // seconds since the load started
	Stmts []int64 // statement counter of each proxy
	Conns []int   // connections per proxy: lbd's Stats for lbd, the proxies' counters otherwise
	// InRotation tells whether the balancer would send new connections to the hung proxy:
	// 1 yes, 0 no, -1 unknown (the balancer could not be asked).
	InRotation int8
	State      string // the balancer's own word for it
}

// faultResult is what one fault phase showed.
type faultResult struct {
	Target      string         `json:"target"`                   // the setup's key
	Run         int            `json:"run"`                      // 1-based repetition
	Hung        int            `json:"hung_proxy"`               // index of the hung proxy
	Statements  int64          `json:"statements_ok"`            // successes over the whole phase
	Errors      int64          `json:"errors"`                   // failures over the whole phase
	Timeouts    int64          `json:"timeouts"`                 // of Errors, deadline passed
	OtherErrors int64          `json:"other_errors"`             // of Errors, anything else
	InFlight    int64          `json:"failed_in_flight_at_hang"` // of Errors, statements already in flight when it hung
	StartedHung int64          `json:"failed_started_in_hang"`   // of Errors, statements started after the hang, before the resume
	CounterStop num            `json:"counter_quiet_after_s"`    // after the hang
	LastFailed  num            `json:"last_failed_start_s"`      // after the hang
	MarkedDown  num            `json:"marked_down_after_s"`      // after the hang
	BackUp      num            `json:"back_in_rotation_s"`       // after the resume
	Recovered   num            `json:"recovered_after_s"`        // after the resume; +Inf: not within Watch
	Watch       float64        `json:"watch_s"`                  // how long recovery was waited for
	Samples     map[string]int `json:"error_samples,omitempty"`  // a few error texts
	// LBDNode is lbd's own account of the hung proxy over the phase (lbd setups only).
	LBDNode *nodeCounters `json:"lbd_hung_node,omitempty"`

	samples []faultSample
	hangT   float64 // seconds since the load started
	resumeT float64 // seconds since the load started
}

// nodeCounters are lbd's cumulative counters for one node, from Connector.Stats.
type nodeCounters struct {
	Dials         uint64 `json:"dials"`
	DialFailures  uint64 `json:"dial_failures"`
	Retired       uint64 `json:"retired"`
	FatalErrors   uint64 `json:"fatal_errors"`
	Transitions   uint64 `json:"transitions"`
	Probes        uint64 `json:"probes"`
	ProbeFailures uint64 `json:"probe_failures"`
	// PassiveSignals are what the application's statements saw against the proxy.
	PassiveSignals uint64 `json:"passive_signals"`
	// DownCause and DownReason are lbd's account of the first markdown after the hang.
	DownCause  string `json:"down_cause,omitempty"`
	DownReason string `json:"down_reason,omitempty"`
	LastError  string `json:"last_error,omitempty"`
}

// runFault runs the fault phase on t: steady load with faultWorkers workers, then proxy
// hungProxy hangs for ft.Hang and resumes, and recovery is watched for at most ft.Watch.
func (b *bench) runFault(ctx context.Context, t target, run int, ft faultTiming) (faultResult, error) {
	db, conn, err := t.open(b.cfg.faultWorkers)
	if err != nil {
		return faultResult{}, err
	}
	defer func() {
		db.Close()
		b.settle()
	}()
	hung := b.proxies[hungProxy]
	start := time.Now()
	l := &load{
		db:          db,
		stmts:       b.stmts,
		workers:     b.cfg.faultWorkers,
		stmtTimeout: b.cfg.stmtTimeout,
		from:        start,
		to:          start.Add(24 * time.Hour),
		seed:        b.seed + 1000 + uint64(run),
	}
	l.start()
	defer l.finish()

	var (
		mu      sync.Mutex
		samples []faultSample
	)
	take := func() {
		s := faultSample{T: time.Since(start).Seconds(), Stmts: b.statementCounts(), InRotation: -1}
		switch {
		case conn != nil:
			s.Conns = b.connCounts(conn)
			if n, ok := conn.Stats().Node(hung.Addr()); ok {
				s.State = n.State.String()
				s.InRotation = boolInt(n.State == lbd.StateUp)
			}
		case t.haproxy != nil:
			s.Conns = b.connCounts(nil)
			if st, err := t.haproxy.ServerStates(); err == nil {
				s.State = st[serverName(hungProxy)]
				s.InRotation = boolInt(strings.HasPrefix(s.State, "UP"))
			}
		default:
			s.Conns = b.connCounts(nil)
		}
		mu.Lock()
		if b.cfg.verbose && (len(samples) == 0 || samples[len(samples)-1].State != s.State) {
			fmt.Printf("  %6.2fs  %s: proxy %d is %q, connections %v\n", s.T, t.Key, hungProxy, s.State, s.Conns)
		}
		samples = append(samples, s)
		mu.Unlock()
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		take()
		for {
			select {
			case <-stopSampling:
				take()
				return
			case <-tick.C:
				take()
			}
		}
	}()
	stopSampler := sync.OnceFunc(func() {
		close(stopSampling)
		<-sampled
	})
	defer stopSampler()

	if err := sleepUntil(ctx, start.Add(ft.Warm)); err != nil {
		return faultResult{}, err
	}
	hung.Hang()
	if b.cfg.verbose {
		fmt.Printf("  %6.2fs  proxy %d hung\n", time.Since(start).Seconds(), hungProxy)
	}
	defer hung.Resume() // idempotent; makes sure an interrupted run leaves no hung proxy
	hangAt := time.Now()
	if err := sleepUntil(ctx, hangAt.Add(ft.Hang)); err != nil {
		return faultResult{}, err
	}
	hung.Resume()
	resumeAt := time.Now()
	if b.cfg.verbose {
		fmt.Printf("  %6.2fs  proxy %d resumed\n", resumeAt.Sub(start).Seconds(), hungProxy)
	}
	hangT, resumeT := hangAt.Sub(start).Seconds(), resumeAt.Sub(start).Seconds()

	// Watch until the proxy has recovered (and 2 s more, for the chart) or the watch ends.
	deadline := resumeAt.Add(ft.Watch)
	for time.Now().Before(deadline) {
		if err := sleepUntil(ctx, time.Now().Add(250*time.Millisecond)); err != nil {
			return faultResult{}, err
		}
		mu.Lock()
		ts, hungC, total := series(samples, hungProxy)
		mu.Unlock()
		rec := recoveredAfter(ts, hungC, total, resumeT, recoverWindow, recoverFraction, len(b.proxies))
		if !math.IsInf(rec, 1) && time.Since(resumeAt).Seconds() >= rec+2 {
			break
		}
	}
	stopSampler()
	l.finish()
	endT := time.Since(start).Seconds()
	var counters *nodeCounters
	if conn != nil {
		st := conn.Stats()
		if n, ok := st.Node(hung.Addr()); ok {
			counters = &nodeCounters{
				Dials: n.Dials, DialFailures: n.DialFailures, Retired: n.Retired, FatalErrors: n.FatalErrors,
				Transitions: n.Transitions, Probes: n.Probes, ProbeFailures: n.ProbeFailures,
				PassiveSignals: n.PassiveSignals, LastError: n.LastError,
			}
			for _, x := range st.Recent {
				if x.Node == hung.Addr() && x.To == lbd.StateDown && !x.At.Before(hangAt) {
					counters.DownCause, counters.DownReason = x.Cause.String(), x.Reason
					break
				}
			}
		}
	}

	ok, _, events, errSamples := l.totals()
	ts, hungC, total := series(samples, hungProxy)
	fr := faultResult{
		Target:      t.Key,
		Run:         run,
		Hung:        hungProxy,
		Statements:  ok,
		CounterStop: num(quietAfter(ts, hungC, hangT, resumeT, quietFor)),
		LastFailed:  num(math.NaN()),
		MarkedDown:  num(firstRotation(samples, hangT, 0)),
		BackUp:      num(firstRotation(samples, resumeT, 1)),
		Recovered:   num(recoveredAfter(ts, hungC, total, resumeT, recoverWindow, recoverFraction, len(b.proxies))),
		Watch:       endT - resumeT,
		Samples:     errSamples,
		LBDNode:     counters,
		samples:     samples,
		hangT:       hangT,
		resumeT:     resumeT,
	}
	if !math.IsNaN(float64(fr.MarkedDown)) {
		fr.MarkedDown -= num(hangT)
	}
	switch {
	case math.IsNaN(float64(fr.MarkedDown)):
		fr.BackUp = num(math.NaN()) // never taken out, so never put back
	case !math.IsNaN(float64(fr.BackUp)):
		fr.BackUp -= num(resumeT)
	}
	last := math.Inf(-1)
	for _, e := range events {
		fr.Errors++
		if e.Kind == errTimeout {
			fr.Timeouts++
		} else {
			fr.OtherErrors++
		}
		// A failure that ended after the hang and started before the resume was caused by it
		// (statements already in flight when it hung included: they count as at the hang).
		if s, end := e.Start.Sub(start).Seconds(), e.End.Sub(start).Seconds(); end >= hangT && s < resumeT {
			last = max(last, s-hangT, 0)
			if s < hangT {
				fr.InFlight++
			} else {
				fr.StartedHung++
			}
		}
	}
	if !math.IsInf(last, -1) {
		fr.LastFailed = num(last)
	}
	return fr, nil
}

func boolInt(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

// series extracts the sample times, the statement counter of proxy h and the sum of every
// proxy's counter.
func series(samples []faultSample, h int) (ts []float64, hung, total []int64) {
	ts = make([]float64, len(samples))
	hung = make([]int64, len(samples))
	total = make([]int64, len(samples))
	for i, s := range samples {
		ts[i] = s.T
		hung[i] = s.Stmts[h]
		for _, c := range s.Stmts {
			total[i] += c
		}
	}
	return ts, hung, total
}

// firstRotation returns the time of the first sample at or after from whose InRotation equals
// want, or NaN when there is none.
func firstRotation(samples []faultSample, from float64, want int8) float64 {
	for _, s := range samples {
		if s.T >= from && s.InRotation == want {
			return s.T
		}
	}
	return math.NaN()
}

// quietAfter returns how long after from the counter went quiet: the first sample time t ≥ from
// such that the counter does not change over [t, t+quiet] and that whole span was observed
// before until. The result is t-from, or NaN when the counter never stayed still that long.
// With samples every 50 ms the answer is good to 50 ms.
func quietAfter(ts []float64, counts []int64, from, until, quiet float64) float64 {
	for i := range ts {
		if ts[i] < from {
			continue
		}
		if ts[i]+quiet > until {
			break
		}
		still, covered := true, false
		for j := i + 1; j < len(ts) && ts[j] <= until; j++ {
			if counts[j] != counts[i] {
				still = false
				break
			}
			if ts[j] >= ts[i]+quiet {
				covered = true
				break
			}
		}
		if still && covered {
			return ts[i] - from
		}
	}
	return math.NaN()
}

// recoveredAfter returns how long after from the hung proxy served statements again at no less
// than fraction of its fair share: the end t of the first sliding window [t-window, t], lying
// wholly after from, in which the proxy's statement count grew by at least
// fraction × (growth of all n proxies' counts) / n. +Inf when no window qualifies.
func recoveredAfter(ts []float64, hung, total []int64, from, window, fraction float64, n int) float64 {
	j := 0
	for i := range ts {
		if ts[i] < from+window {
			continue
		}
		for j < i && ts[j] < ts[i]-window {
			j++
		}
		if ts[j] < from {
			continue
		}
		all := total[i] - total[j]
		if all <= 0 {
			continue
		}
		if float64(hung[i]-hung[j]) >= fraction*float64(all)/float64(n) {
			return ts[i] - from
		}
	}
	return math.Inf(1)
}
