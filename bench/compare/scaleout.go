package main

// The scale-out phase: lbd holds a busy pool over the proxies, one more proxy joins the node
// list, and the phase follows the newcomer's share of the pool's connections and the new
// connections it receives, once per warm-up setting. It writes its own report (scaleout.md,
// scaleout.json, scaleout_share.png) and leaves the load and fault phases' README alone, so it
// can be run by itself: go run ./bench/compare -only scaleout.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"image/color"
	"log/slog"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

const (
	scaleOutFile  = "scaleout.md"
	scaleOutJSON  = "scaleout.json"
	scaleOutChart = "scaleout_share.png"
	// scaleOutPool is the pool the phase keeps busy: enough connections that a quarter of them
	// is a wave worth seeing, few enough for a 2-CPU machine.
	scaleOutPool = 48
	// scaleOutLatency is added to every statement at every proxy, so the workers keep every
	// pooled connection in use (as a pool under real load does) instead of reusing a few.
	scaleOutLatency = 2 * time.Millisecond
	// scaleOutSample is the sampling period.
	scaleOutSample = 250 * time.Millisecond
)

// scaleOutWarmups are the warmupSeconds settings compared: off (the whole surplus in one
// rebalancing round), and around the default.
var scaleOutWarmups = []time.Duration{0, 10 * time.Second, lbd.DefaultWarmup, 60 * time.Second}

// scaleOutPoint is one sample of the newcomer.
type scaleOutPoint struct {
	T      float64 `json:"t"`      // seconds since the newcomer was listed
	Share  float64 `json:"share"`  // of the pool's open connections on the newcomer
	Open   int     `json:"open"`   // connections open on the newcomer
	Dials  uint64  `json:"dials"`  // connections dialled to the newcomer so far
	Warmup float64 `json:"warmup"` // its warm-up progress, from Stats
}

// scaleOutResult is one warm-up setting's run.
type scaleOutResult struct {
	Warmup      float64         `json:"warmup_s"`
	Fair        float64         `json:"fair_share"`
	Points      []scaleOutPoint `json:"points"`
	LargestWave int             `json:"largest_wave"` // most connections dialled to the newcomer within one second
	FirstConnAt float64         `json:"first_conn_s"` // when its first connection was dialled, -1 if never
	HalfShareAt float64         `json:"half_share_s"` // when it first held half its fair share
	FairShareAt float64         `json:"fair_share_s"` // when it first held its fair share (within one connection)
	Errors      int64           `json:"errors"`       // statements that failed during the phase
	ShareAt     []float64       `json:"share_at"`     // its share at scaleOutMarks
}

// scaleOutMarks are the times after being listed at which the report shows the newcomer's share:
// after the first, second and third rebalancing round at the default interval.
var scaleOutMarks = []float64{10, 20, 30}

// runScaleOut runs the phase for every warm-up setting on a cluster of its own, SELECT 1 only
// (the newcomer's share of connections is the figure; the statement mix does not change it).
func runScaleOut(ctx context.Context, cfg config) ([]scaleOutResult, error) {
	var out []scaleOutResult
	for _, w := range scaleOutWarmups {
		r, err := scaleOutOnce(ctx, cfg, w)
		if err != nil {
			return nil, fmt.Errorf("warm-up %v: %w", w, err)
		}
		fmt.Printf("scale-out warmupSeconds=%-3.0f largest wave %2d conns/s  first conn %s  half share %s  fair share %s  errors %d\n",
			r.Warmup, r.LargestWave, fmtSec(r.FirstConnAt), fmtSec(r.HalfShareAt), fmtSec(r.FairShareAt), r.Errors)
		out = append(out, r)
	}
	return out, nil
}

func scaleOutOnce(ctx context.Context, cfg config, warmup time.Duration) (scaleOutResult, error) {
	cl, err := lbdtest.Start(cfg.proxies)
	if err != nil {
		return scaleOutResult{}, err
	}
	defer cl.Close()
	for _, p := range cl.Proxies() {
		p.SetLatency(scaleOutLatency)
	}
	dsn := cl.DSN(clientParams + "&warmupSeconds=" + strconv.Itoa(int(warmup/time.Second)))
	c, err := lbd.NewConnector(dsn, lbd.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return scaleOutResult{}, err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	sizePool(db, scaleOutPool)

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs int64
	for range scaleOutPool {
		wg.Go(func() {
			for wctx.Err() == nil {
				sctx, cancel := context.WithTimeout(wctx, cfg.stmtTimeout)
				var one int
				err := db.QueryRowContext(sctx, "SELECT 1").Scan(&one)
				cancel()
				if err != nil && wctx.Err() == nil {
					mu.Lock()
					errs++
					mu.Unlock()
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	if err := sleepUntil(ctx, time.Now().Add(3*time.Second)); err != nil { // the pool fills
		return scaleOutResult{}, err
	}

	p, err := cl.AddProxy()
	if err != nil {
		return scaleOutResult{}, err
	}
	p.SetLatency(scaleOutLatency)
	listed := time.Now()
	if err := c.SetNodes(cl.Addrs()); err != nil {
		return scaleOutResult{}, err
	}
	// Long enough for the rebalancer's rounds after the warm-up ends to show.
	watch := max(warmup*3/2, warmup+2*lbd.DefaultCheckBalanceInterval+5*time.Second)
	res := scaleOutResult{Warmup: warmup.Seconds(), Fair: 1 / float64(cfg.proxies+1), FirstConnAt: -1, HalfShareAt: -1, FairShareAt: -1}
	for next := listed; next.Sub(listed) <= watch; next = next.Add(scaleOutSample) {
		if err := sleepUntil(ctx, next); err != nil {
			return scaleOutResult{}, err
		}
		st := c.Stats()
		ns, _ := st.Node(p.Addr())
		pt := scaleOutPoint{T: time.Since(listed).Seconds(), Open: ns.Open, Dials: ns.Dials, Warmup: ns.Warmup}
		if total := st.Open(); total > 0 {
			pt.Share = float64(ns.Open) / float64(total)
		}
		res.Points = append(res.Points, pt)
	}
	mu.Lock()
	res.Errors = errs
	mu.Unlock()
	res.summarise(warmup, scaleOutPool)
	return res, nil
}

// summarise fills the figures derived from the samples.
func (r *scaleOutResult) summarise(warmup time.Duration, pool int) {
	fairConns := r.Fair * float64(pool)
	perSecond := int(math.Round(float64(time.Second / scaleOutSample)))
	for i, pt := range r.Points {
		if pt.Dials > 0 && r.FirstConnAt < 0 {
			r.FirstConnAt = pt.T
		}
		if float64(pt.Open) >= fairConns/2 && r.HalfShareAt < 0 {
			r.HalfShareAt = pt.T
		}
		if float64(pt.Open) >= fairConns-1 && r.FairShareAt < 0 {
			r.FairShareAt = pt.T
		}
		if j := i - perSecond; j >= 0 {
			r.LargestWave = max(r.LargestWave, int(pt.Dials-r.Points[j].Dials))
		} else {
			r.LargestWave = max(r.LargestWave, int(pt.Dials))
		}
	}
	r.ShareAt = make([]float64, len(scaleOutMarks))
	for i, m := range scaleOutMarks {
		for _, pt := range r.Points {
			if pt.T <= m {
				r.ShareAt[i] = pt.Share
			}
		}
	}
}

// writeScaleOut writes the phase's report, raw figures and chart into dir.
func writeScaleOut(dir string, cfg config, rs []scaleOutResult) error {
	raw, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, scaleOutJSON), append(raw, '\n')); err != nil {
		return err
	}
	if err := scaleOutPlot(filepath.Join(dir, scaleOutChart), rs); err != nil {
		return err
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Scale-out: a proxy joins a busy pool\n\n")
	w("Written by `go run ./bench/compare -only scaleout -proxies %d`; run it again rather than editing this file. Raw samples are in [%s](%s).\n\n", cfg.proxies, scaleOutJSON, scaleOutJSON)
	w("%d workers keep a pool of %d connections busy with `SELECT 1` (each proxy adds %v per statement) over %d lbdtest proxies, lbd at its defaults but for `warmupSeconds`, ",
		scaleOutPool, scaleOutPool, scaleOutLatency, cfg.proxies)
	w("on %d CPUs (%s/%s, %s). After 3 s a proxy is added (`Connector.SetNodes`); the pool's connections are sampled every %v from `Connector.Stats`. ",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, cpuModel(), scaleOutSample)
	w("Its fair share is 1/%d of the pool, %.0f connections. New connections come from the rebalancer's rounds (every %v): it retires the surplus over each proxy's weighted share, and database/sql dials the replacements, which the pick sends by weighted least-connections.\n\n",
		cfg.proxies+1, float64(scaleOutPool)/float64(cfg.proxies+1), lbd.DefaultCheckBalanceInterval)
	w("| warmupSeconds | largest wave (new conns to it within 1 s) | first conn | half its share | its fair share | its share at 10 s / 20 s / 30 s | errors |\n")
	w("|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rs {
		at := make([]string, len(r.ShareAt))
		for i, v := range r.ShareAt {
			at[i] = fmtPct(num(v))
		}
		w("| %.0f | %d | %s | %s | %s | %s | %d |\n", r.Warmup, r.LargestWave, fmtSec(r.FirstConnAt), fmtSec(r.HalfShareAt), fmtSec(r.FairShareAt), strings.Join(at, " / "), r.Errors)
	}
	w("\n![the newcomer's share of the pool over time](%s)\n\n", scaleOutChart)
	w("- **largest wave** is the most connections dialled to the new proxy within any one second: without slow start the first rebalancing round moves the whole surplus into it at once; with it, each round moves the slice its warm-up allows.\n")
	w("- **half its share / its fair share**: seconds from being listed until it held half its fair share, and its fair share within one connection.\n")
	w("- lbd's default, `warmupSeconds=%.0f`, spans three rounds at the default rebalancing interval: the move comes in waves of a fraction of the surplus instead of one, and the proxy holds its fair share well under a minute after it joins. A longer window cuts the waves further and keeps the proxy under its share for longer.\n", lbd.DefaultWarmup.Seconds())
	return writeFileAtomic(filepath.Join(dir, scaleOutFile), []byte(b.String()))
}

func scaleOutPlot(path string, rs []scaleOutResult) error {
	if len(rs) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "New proxy's share of the pool's connections after it joins"
	p.X.Label.Text = "seconds since the proxy was listed"
	p.Y.Label.Text = "share of open connections"
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, r := range rs {
		xy := make(plotter.XYs, len(r.Points))
		for k, pt := range r.Points {
			xy[k] = plotter.XY{X: pt.T, Y: pt.Share}
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.8)
		name := fmt.Sprintf("warmupSeconds=%.0f", r.Warmup)
		if r.Warmup == 0 {
			name += " (off)"
		}
		p.Add(line)
		p.Legend.Add(name, line)
	}
	last := slices.MaxFunc(rs, func(a, b scaleOutResult) int { return len(a.Points) - len(b.Points) })
	fair, err := plotter.NewLine(plotter.XYs{{X: 0, Y: rs[0].Fair}, {X: last.Points[len(last.Points)-1].T, Y: rs[0].Fair}})
	if err != nil {
		return err
	}
	fair.Color = color.Gray{Y: 80}
	fair.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(fair)
	p.Legend.Add("fair share", fair)
	p.Y.Min, p.Y.Max = 0, rs[0].Fair*2
	return savePNG(p, path)
}
