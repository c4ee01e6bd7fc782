package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// barWidth is the width of the bar that shows each proxy's share of the statements.
const barWidth = 40

// monitor prints what the demo shows: once a second, every proxy with its state and open
// connections as lbd sees them and, for the in-memory cluster, the statements it relayed in
// that second (from the proxy's own counter); at the end, a summary.
type monitor struct {
	out       io.Writer
	start     time.Time
	connector *lbd.Connector
	cluster   *lbdtest.Cluster // nil against real proxies
	work      *workload

	prevStmts map[string]int64 // per proxy, its statement counter at the last report
	prevRows  int64
	prevErrs  int64
}

// balanceMeaning says in a few words what each balance mode balances.
var balanceMeaning = map[lbd.BalanceMode]string{
	lbd.BalanceConnection: "lbd spreads new connections over the proxies; database/sql reuses them",
	lbd.BalanceStatement:  "lbd binds every checkout of a pooled connection to the least busy proxy",
}

// intro says what is about to happen.
func (m *monitor) intro(cfg config, table string) {
	nodes := m.connector.Config().Nodes
	fmt.Fprintf(m.out, "Balance mode: %s (%s).\n", cfg.Balance, balanceMeaning[cfg.Balance])
	fmt.Fprintln(m.out, "To see the modes differ, run -workers 1 once with -balance connection and once with")
	fmt.Fprintln(m.out, "-balance statement: one worker reuses one pooled connection, so connection mode sends")
	fmt.Fprintln(m.out, "every statement to one proxy, and statement mode spreads them over all of them.")
	if m.cluster != nil {
		fmt.Fprintf(m.out, "%d workers insert rows and read them back for %v through %s:\n  %s\n",
			cfg.Workers, cfg.Duration, plural(len(nodes), "in-memory proxy", "in-memory proxies"), strings.Join(nodes, "  "))
		at := func(frac float64) time.Duration {
			return time.Duration(frac * float64(cfg.Duration)).Round(100 * time.Millisecond)
		}
		fmt.Fprintf(m.out, "Proxy %s stops at %v and starts again at %v; a fourth proxy joins at %v.\n",
			nodes[1], at(stopAt), at(restartAt), at(addAt))
		fmt.Fprintln(m.out, "stmts/s is what each proxy relayed, lbd's health probes included. The in-memory")
		fmt.Fprintln(m.out, "database slows down as its table grows: watch the shares, not the totals.")
		return
	}
	fmt.Fprintf(m.out, "%d workers insert rows and read them back for %v through %s from -dsn:\n  %s\n",
		cfg.Workers, cfg.Duration, plural(len(nodes), "proxy", "proxies"), strings.Join(nodes, "  "))
	fmt.Fprintf(m.out, "Rows go to table %s, dropped at the end.\n", table)
	fmt.Fprintln(m.out, "Statements per proxy are unavailable with real proxies (only the in-memory ones count")
	fmt.Fprintln(m.out, "them); the table shows lbd's open and idle connections per proxy instead.")
}

// report prints one table: a header with the time, rows written per second and errors, then
// one line per proxy.
func (m *monitor) report(now time.Time) {
	stats := m.connector.Stats()
	rows, errs := m.work.inserted.Load(), m.work.errs.Load()
	elapsed := fmt.Sprintf("%ds", int(now.Sub(m.start).Round(time.Second).Seconds()))
	fmt.Fprintf(m.out, "\nt=%-4s %6d rows/s   errors %d (total %d)", elapsed, rows-m.prevRows, errs-m.prevErrs, errs)
	if errs > m.prevErrs {
		fmt.Fprintf(m.out, "   last: %s", shorten(m.work.lastError(), 70))
	}
	fmt.Fprintln(m.out)
	m.prevRows, m.prevErrs = rows, errs

	if m.cluster == nil {
		w := addrWidth(stats.Nodes)
		fmt.Fprintf(m.out, "  %-*s  %-8s %5s %5s\n", w, "proxy", "state", "open", "idle")
		for _, n := range stats.Nodes {
			fmt.Fprintf(m.out, "  %-*s  %-8s %5d %5d\n", w, n.Addr, n.State, n.Open, n.Idle)
		}
		return
	}

	// The proxies' counters include lbd's probes, two per proxy per second here.
	proxies := m.cluster.Proxies()
	counts := make(map[string]int64, len(proxies))
	deltas := make([]int64, len(proxies))
	var total int64
	for i, p := range proxies {
		counts[p.Addr()] = p.Statements()
		deltas[i] = counts[p.Addr()] - m.prevStmts[p.Addr()]
		total += deltas[i]
	}
	m.prevStmts = counts

	w := addrWidth(stats.Nodes)
	fmt.Fprintf(m.out, "  %-*s  %-8s %5s %8s\n", w, "proxy", "state", "open", "stmts/s")
	for i, p := range proxies {
		state, open := "-", 0
		if n, ok := stats.Node(p.Addr()); ok {
			state, open = n.State.String(), n.Open
		}
		fmt.Fprintf(m.out, "  %-*s  %-8s %5d %8d", w, p.Addr(), state, open, deltas[i])
		if bar := barLen(deltas[i], total); bar > 0 {
			fmt.Fprintf(m.out, "  %s", strings.Repeat("#", bar))
		}
		fmt.Fprintln(m.out)
	}
}

// summary is the outcome of a run.
type summary struct {
	Elapsed  time.Duration
	Written  int64 // rows the workload wrote, Landed included
	Landed   int64 // inserts that reported an error yet reached the table
	Counted  int64 // rows in the table at the end (SELECT COUNT(*))
	ReadBack int64 // rows read back by ID right after their insert, and found as written
	Errors   int64 // failed statements, and rows read back wrong
	Proxies  []proxySummary
}

// proxySummary is one proxy at the end of a run.
type proxySummary struct {
	Addr       string
	State      string
	Open       int    // open connections lbd holds to it
	Probes     uint64 // health probes lbd ran on it
	Statements int64  // statements it relayed over the run, probes included; -1 when unknown (real proxies)
}

// summarize gathers the summary once the workload has stopped.
func (m *monitor) summarize(landed, counted int64) summary {
	s := summary{
		Elapsed:  time.Since(m.start),
		Written:  m.work.inserted.Load() + landed,
		Landed:   landed,
		Counted:  counted,
		ReadBack: m.work.readBack.Load(),
		Errors:   m.work.errs.Load(),
	}
	relayed := make(map[string]int64)
	if m.cluster != nil {
		for _, p := range m.cluster.Proxies() {
			relayed[p.Addr()] = p.Statements()
		}
	}
	for _, n := range m.connector.Stats().Nodes {
		stmts, ok := relayed[n.Addr]
		if !ok {
			stmts = -1
		}
		s.Proxies = append(s.Proxies, proxySummary{
			Addr: n.Addr, State: n.State.String(), Open: n.Open, Probes: n.Probes, Statements: stmts,
		})
	}
	return s
}

// printSummary prints s.
func (m *monitor) printSummary(s summary) {
	fmt.Fprintf(m.out, "\n== summary after %v\n", s.Elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(m.out, "  rows written    %8d", s.Written)
	if s.Landed > 0 {
		fmt.Fprintf(m.out, "   (%d of them by inserts that reported an error but reached the table)", s.Landed)
	}
	fmt.Fprintln(m.out)
	verdict := "matches rows written"
	if s.Counted != s.Written {
		verdict = fmt.Sprintf("MISMATCH: %+d rows", s.Counted-s.Written)
	}
	fmt.Fprintf(m.out, "  rows counted    %8d   SELECT COUNT(*) at the end: %s\n", s.Counted, verdict)
	fmt.Fprintf(m.out, "  rows read back  %8d   by ID, right after their insert\n", s.ReadBack)
	fmt.Fprintf(m.out, "  errors          %8d", s.Errors)
	if m.cluster != nil && s.Errors > 0 {
		fmt.Fprint(m.out, "   expected: statements in flight on the proxy when it stopped")
	}
	fmt.Fprintln(m.out)

	w := 0
	for _, p := range s.Proxies {
		w = max(w, len(p.Addr))
	}
	fmt.Fprintln(m.out, "  at the end:")
	for _, p := range s.Proxies {
		fmt.Fprintf(m.out, "    %-*s  %-8s %3d open connections", w, p.Addr, p.State, p.Open)
		if p.Statements >= 0 {
			fmt.Fprintf(m.out, "  %8d statements relayed", p.Statements)
		}
		fmt.Fprintln(m.out)
	}
}

// barLen is the length of the bar for part of total: barWidth for all of it, rounded.
func barLen(part, total int64) int {
	if total <= 0 {
		return 0
	}
	return int((part*barWidth + total/2) / total)
}

// addrWidth is the width of the widest address in nodes, at least that of "proxy".
func addrWidth(nodes []lbd.NodeStats) int {
	w := len("proxy")
	for _, n := range nodes {
		w = max(w, len(n.Addr))
	}
	return w
}

// plural returns "1 proxy", "3 proxies" and the like.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// shorten cuts s to at most n bytes, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
