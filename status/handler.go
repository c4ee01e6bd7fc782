// Package status serves an embeddable, read-only status page for an lbd Connector, as
// net/http/pprof, expvar and gRPC's channelz do for their own state: every node with its state,
// role, weight and effective weight, slow-start progress, connections, dials, retirements,
// passive signals, probes and transitions by cause, the latest state changes with their reasons, and a chart of open connections per node over the last minutes. The same
// data is served as JSON (?format=json).
//
// The page's cost does not grow with the fleet past a bound: the node table is served a page
// at a time (DefaultPageSize nodes, at most MaxPageSize) with a summary of every node, and the
// chart keeps per-node history for the ChartNodes busiest nodes and one sum for the rest. At
// 10 000 nodes a poll is about 330 KiB and the history about 300 KiB.
//
// The page is one HTML document with its style and a small script inline; it loads nothing
// from the network and draws its chart as inline SVG from the JSON it polls. It shows nothing
// Stats does not (no password: lbd never puts one in Stats), changes nothing, and answers only
// GET and HEAD, so it may be mounted behind the application's own authentication:
//
//	page, err := status.New(connector, status.Options{})
//	...
//	defer page.Close()
//	mux.Handle("/debug/lbd/", page)
package status

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/lbd-go/lbd"
)

// Options configures a Handler; the zero value takes the defaults.
type Options struct {
	// SampleInterval is how often the open connections per node are sampled for the chart, and
	// how often the page polls. Default 2 s; at least 100 ms.
	SampleInterval time.Duration
	// Window is how far back the chart goes. Default 10 minutes; at most 10,000 samples.
	Window time.Duration
}

// Defaults of Options.
const (
	DefaultSampleInterval = 2 * time.Second
	DefaultWindow         = 10 * time.Minute
	minSampleInterval     = 100 * time.Millisecond
	maxSamples            = 10000
)

// Handler is the status page of one Connector, an http.Handler. It samples the Connector's
// open connections per node every SampleInterval in a goroutine of its own until Close.
type Handler struct {
	c        *lbd.Connector
	interval time.Duration
	hist     *history

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New returns the status page of c and starts its sampling. Errors: a nil Connector, a
// SampleInterval below 100 ms or a Window shorter than one SampleInterval or longer than
// 10,000 of them.
func New(c *lbd.Connector, opts Options) (*Handler, error) {
	if c == nil {
		return nil, fmt.Errorf("status: New: nil Connector")
	}
	if opts.SampleInterval == 0 {
		opts.SampleInterval = DefaultSampleInterval
	}
	if opts.Window == 0 {
		opts.Window = DefaultWindow
	}
	if opts.SampleInterval < minSampleInterval {
		return nil, fmt.Errorf("status: SampleInterval %v is below %v", opts.SampleInterval, minSampleInterval)
	}
	size := int(opts.Window / opts.SampleInterval)
	if size < 1 || size > maxSamples {
		return nil, fmt.Errorf("status: Window %v holds %d samples of %v; it must hold from 1 to %d",
			opts.Window, size, opts.SampleInterval, maxSamples)
	}
	h := &Handler{c: c, interval: opts.SampleInterval, hist: newHistory(size),
		stop: make(chan struct{}), done: make(chan struct{})}
	h.hist.add(c.Stats(), time.Now())
	go h.sample()
	return h, nil
}

// Close stops the sampling and waits for it; the page goes on answering with the samples it
// has. Close is idempotent and returns nil.
func (h *Handler) Close() error {
	h.closeOnce.Do(func() { close(h.stop) })
	<-h.done
	return nil
}

func (h *Handler) sample() {
	defer close(h.done)
	t := time.NewTicker(h.interval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case now := <-t.C:
			h.hist.add(h.c.Stats(), now)
		}
	}
}

// Report returns what the JSON form of the page shows now, with its first page of nodes
// (DefaultPageSize); ReportPage returns another.
func (h *Handler) Report() Report { return h.ReportPage(0, DefaultPageSize) }

// ReportPage returns what the JSON form of the page shows now, with at most limit nodes from
// the offset-th on (0 is the first; an offset past the end gives none). limit is clamped to
// from 0 to MaxPageSize.
func (h *Handler) ReportPage(offset, limit int) Report {
	r := report(h.c.Stats(), time.Now(), offset, min(limit, MaxPageSize))
	r.History = History{Interval: h.interval.Seconds(), Samples: h.hist.list()}
	return r
}

// pageParams reads ?offset= and ?limit= (the node table's page), saying what is wrong with
// them.
func pageParams(q url.Values) (offset, limit int, err error) {
	offset, limit = 0, DefaultPageSize
	if v := q.Get("offset"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, fmt.Errorf("offset %q is not a whole number from 0: it is where the page of nodes starts", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > MaxPageSize {
			return 0, 0, fmt.Errorf("limit %q is not a whole number from 1 to %d: it is how many nodes a page shows; "+
				"page through a larger fleet with offset", v, MaxPageSize)
		}
	}
	return offset, limit, nil
}

//go:embed page.html
var page []byte

// pageCSP allows the page its own inline style and script (by their hashes), requests to its
// own origin, and nothing else.
var pageCSP = func() string {
	hash := func(re string) string {
		m := regexp.MustCompile(re).FindSubmatch(page)
		if m == nil {
			panic("status: page.html lacks " + re)
		}
		sum := sha256.Sum256(m[1])
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	return "default-src 'none'; connect-src 'self'; img-src 'self' data:; " +
		"style-src " + hash(`(?s)<style>(.*?)</style>`) + "; script-src " + hash(`(?s)<script>(.*?)</script>`)
}()

// ServeHTTP serves the page, or with ?format=json its Report: ?offset= and ?limit= choose the
// page of nodes (0 and DefaultPageSize by default; a limit from 1 to MaxPageSize, else 400). Only GET and HEAD are answered
// (405 otherwise); nothing is cached.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the lbd status page is read-only: use GET", http.StatusMethodNotAllowed)
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	switch f := r.URL.Query().Get("format"); f {
	case "json":
		offset, limit, err := pageParams(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		hd.Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		_ = enc.Encode(h.ReportPage(offset, limit)) // a failed write is the client gone
	case "", "html":
		hd.Set("Content-Type", "text/html; charset=utf-8")
		hd.Set("Content-Security-Policy", pageCSP)
		hd.Set("X-Frame-Options", "DENY")
		_, _ = w.Write(page)
	default:
		http.Error(w, fmt.Sprintf("unknown format %q: use format=json, or none for the page", f), http.StatusBadRequest)
	}
}
