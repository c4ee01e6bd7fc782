package main

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Chart file names, relative to the output directory.
const (
	cdfFile  = "latency_cdf.png"
	tailFile = "latency_tail.png"
)

func faultFile(key string) string { return "fault_conns_" + key + ".png" }

// writeCharts draws the latency CDF, its tail, and one connections-over-time chart per
// fault-phase setup into dir, removing fault charts of setups that were not run this time.
func writeCharts(dir string, r *results) error {
	old, _ := filepath.Glob(filepath.Join(dir, "fault_conns_*.png"))
	for _, f := range old {
		os.Remove(f)
	}
	if err := latencyCharts(dir, r); err != nil {
		return err
	}
	for _, t := range r.FaultTarget {
		var last *faultResult
		for i := range r.Faults {
			if r.Faults[i].Target == t.Key {
				last = &r.Faults[i]
			}
		}
		if last == nil {
			continue
		}
		if err := faultChart(filepath.Join(dir, faultFile(t.Key)), t.Label, last); err != nil {
			return err
		}
	}
	return nil
}

// savePNG renders p as a PNG at path, through a temporary file.
func savePNG(p *plot.Plot, path string) error {
	wt, err := p.WriterTo(9*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}

// pooledLatencies merges the sorted latencies of every run of target at workers.
func (r *results) pooledLatencies(target string, workers int) []float64 {
	var all []float64
	for _, p := range r.Phases {
		if p.Target == target && p.Workers == workers {
			all = append(all, p.lat...)
		}
	}
	slices.Sort(all)
	return all
}

// nines maps a cumulative fraction to -log10(1-f): 1 at 90 %, 2 at 99 %, 3 at 99.9 %.
func nines(f float64) float64 { return -math.Log10(1 - f) }

func latencyCharts(dir string, r *results) error {
	wk := cdfWorkers(r.Config.workers)
	cdf := plot.New()
	cdf.Title.Text = fmt.Sprintf("Statement latency CDF, %s (all runs pooled)", workersText(wk))
	cdf.X.Label.Text = "latency (ms, log scale)"
	cdf.Y.Label.Text = "fraction of statements at or below"
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = plot.LogTicks{Prec: -1}
	cdf.Y.Min, cdf.Y.Max = 0, 1
	cdf.Legend.Top = false
	cdf.Legend.Left = false
	cdf.Add(plotter.NewGrid())

	tail := plot.New()
	tail.Title.Text = fmt.Sprintf("Latency tail, %s (all runs pooled)", workersText(wk))
	tail.X.Label.Text = "latency (ms, log scale)"
	tail.Y.Label.Text = "percentile"
	tail.X.Scale = plot.LogScale{}
	tail.X.Tick.Marker = plot.LogTicks{Prec: -1}
	tail.Y.Tick.Marker = plot.ConstantTicks{
		{Value: 0, Label: "0"}, {Value: nines(0.5), Label: "50"}, {Value: 1, Label: "90"},
		{Value: 2, Label: "99"}, {Value: 3, Label: "99.9"}, {Value: 4, Label: "99.99"}, {Value: 5, Label: "99.999"},
	}
	tail.Y.Min = 0
	tail.Legend.Top = true
	tail.Legend.Left = true
	tail.Add(plotter.NewGrid())

	drawn := 0
	for i, t := range r.Targets {
		lat := r.pooledLatencies(t.Key, wk)
		if len(lat) == 0 {
			continue
		}
		pts := cdfPoints(lat, 2000)
		xy := make(plotter.XYs, len(pts))
		txy := make(plotter.XYs, len(pts))
		n := float64(len(lat))
		for k, pt := range pts {
			x := math.Max(pt.X, 1e-3) // a log axis needs positive values
			xy[k] = plotter.XY{X: x, Y: pt.F}
			// Plot the tail at i/(n+1) so the slowest sample stays finite.
			txy[k] = plotter.XY{X: x, Y: nines(pt.F * n / (n + 1))}
		}
		for _, pair := range []struct {
			p   *plot.Plot
			xys plotter.XYs
		}{{cdf, xy}, {tail, txy}} {
			line, err := plotter.NewLine(pair.xys)
			if err != nil {
				return err
			}
			line.Color = plotutil.Color(i)
			line.Width = vg.Points(1.5)
			pair.p.Add(line)
			pair.p.Legend.Add(t.Label, line)
		}
		drawn++
	}
	if drawn == 0 {
		return nil
	}
	if err := savePNG(cdf, filepath.Join(dir, cdfFile)); err != nil {
		return err
	}
	return savePNG(tail, filepath.Join(dir, tailFile))
}

// faultChart draws connections per proxy over time with the hang and the resume marked.
func faultChart(path, label string, f *faultResult) error {
	if len(f.samples) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Connections per proxy, %s; proxy %d hung", label, f.Hung)
	p.X.Label.Text = "seconds since the load started"
	p.Y.Label.Text = "open connections"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	proxies := len(f.samples[0].Conns)
	ymax := 1.0
	for _, s := range f.samples {
		for _, c := range s.Conns {
			ymax = math.Max(ymax, float64(c))
		}
	}
	for i := range proxies {
		xy := make(plotter.XYs, len(f.samples))
		for k, s := range f.samples {
			xy[k] = plotter.XY{X: s.T, Y: float64(s.Conns[i])}
		}
		line, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		line.Color = plotutil.Color(i)
		line.Width = vg.Points(1.5)
		name := "proxy " + strconv.Itoa(i)
		if i == f.Hung {
			line.Width = vg.Points(2.5)
			name += " (hung)"
		}
		p.Add(line)
		p.Legend.Add(name, line)
	}
	for _, m := range []struct {
		t    float64
		name string
		dash []vg.Length
	}{{f.hangT, "hang", []vg.Length{vg.Points(6), vg.Points(3)}}, {f.resumeT, "resume", []vg.Length{vg.Points(2), vg.Points(2)}}} {
		line, err := plotter.NewLine(plotter.XYs{{X: m.t, Y: 0}, {X: m.t, Y: ymax * 1.05}})
		if err != nil {
			return err
		}
		line.Color = color.Gray{Y: 80}
		line.Dashes = m.dash
		p.Add(line)
		p.Legend.Add(m.name, line)
	}
	p.Y.Min = 0
	p.Y.Max = ymax * 1.6 // room for the legend above the lines
	p.X.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ts []plot.Tick
		for x := math.Ceil(lo/5) * 5; x <= hi; x += 5 {
			ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', 0, 64)})
		}
		return ts
	})
	return savePNG(p, path)
}
