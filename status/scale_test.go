package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// TestHistoryNamesTheBusiestNodes: a sample names the ChartNodes nodes with the most open
// connections (the first listed among equals) and sums the rest.
func TestHistoryNamesTheBusiestNodes(t *testing.T) {
	var st lbd.Stats
	for i := range ChartNodes + 10 {
		st.Nodes = append(st.Nodes, lbd.NodeStats{Addr: fmt.Sprintf("n%d:1", i), Open: i % 7})
	}
	h := newHistory(2)
	h.add(st, time.Unix(1000, 0))
	s := h.list()[0]
	if len(s.Open) != ChartNodes || s.Others.Nodes != 10 {
		t.Fatalf("sample names %d nodes and sums %d, want %d and 10", len(s.Open), s.Others.Nodes, ChartNodes)
	}
	least := 7
	for _, v := range s.Open {
		least = min(least, v)
	}
	total, named := 0, 0
	for _, n := range st.Nodes {
		total += n.Open
		if v, ok := s.Open[n.Addr]; ok {
			named += v
		} else if n.Open > least {
			t.Errorf("%s holds %d but is not named, while a named node holds %d", n.Addr, n.Open, least)
		}
	}
	if named+s.Others.Open != total {
		t.Errorf("named %d + others %d, want the %d open in all", named, s.Others.Open, total)
	}
}

// TestPageAtTenThousandNodes: with 10 000 nodes and a full history (the default 300 samples),
// the history holds under 2 MiB, one JSON poll is under 16 MiB whatever page it asks for, and
// the pages and the summary cover every node.
func TestPageAtTenThousandNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("10 000 nodes: not in -short")
	}
	srv := mysqlfake.Start(t, mysqlfake.Config{})
	c, err := lbd.NewConnector("u:p@lb("+srv.Addr()+")/db?timeout=2s", lbd.WithLogger(discard),
		lbd.WithCheckHealthInterval(time.Hour), lbd.WithCheckBalanceInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 10_000
	list := []string{srv.Addr()}
	for i := range n - 1 {
		list = append(list, fmt.Sprintf("127.1.%d.%d:1", i/250, i%250+1)) // nothing listens: refused at once
	}
	if err := c.SetNodes(list); err != nil {
		t.Fatal(err)
	}
	h, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	st := c.Stats()
	for i := range int(DefaultWindow / DefaultSampleInterval) {
		h.hist.add(st, time.Now().Add(time.Duration(i)*DefaultSampleInterval))
	}
	web := httptest.NewServer(h)
	defer web.Close()
	poll := func(query string) (Report, int) {
		t.Helper()
		start := time.Now()
		resp, body := get(t, web.URL+"?format=json"+query)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", query, resp.StatusCode, body)
		}
		var r Report
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		t.Logf("poll %q: %d KiB in %v", query, len(body)>>10, time.Since(start))
		if len(body) > 16<<20 {
			t.Errorf("poll %q is %d KiB, want under 16 MiB", query, len(body)>>10)
		}
		return r, len(body)
	}
	r, _ := poll("")
	if r.NodesTotal != n || len(r.Nodes) != DefaultPageSize || r.Offset != 0 {
		t.Errorf("default poll: %d of %d nodes from %d, want %d of %d from 0", len(r.Nodes), r.NodesTotal, r.Offset, DefaultPageSize, n)
	}
	counted := 0
	for _, v := range r.Summary.States {
		counted += v
	}
	if counted != n {
		t.Errorf("summary counts %d nodes by state (%v), want %d", counted, r.Summary.States, n)
	}
	if s := r.History.Samples[len(r.History.Samples)-1]; len(s.Open) != ChartNodes || s.Others.Nodes != n-ChartNodes {
		t.Errorf("a sample names %d nodes and sums %d, want %d and %d", len(s.Open), s.Others.Nodes, ChartNodes, n-ChartNodes)
	}
	r, _ = poll(fmt.Sprintf("&offset=%d&limit=%d", n-100, MaxPageSize))
	if len(r.Nodes) != 100 || r.Offset != n-100 || r.Nodes[99].Addr != list[n-1] {
		t.Errorf("last page: %d nodes from %d, want the last 100", len(r.Nodes), r.Offset)
	}
	poll(fmt.Sprintf("&limit=%d", MaxPageSize))

	// The history's own size, measured with the Connector's probing stopped so that probes in
	// flight do not blur it.
	h.Close()
	c.Close()
	before := liveHeap()
	hist := newHistory(int(DefaultWindow / DefaultSampleInterval))
	for i := range int(DefaultWindow / DefaultSampleInterval) {
		hist.add(st, time.Now().Add(time.Duration(i)*DefaultSampleInterval))
	}
	held := liveHeap() - before
	runtime.KeepAlive(hist)
	runtime.KeepAlive(st)
	t.Logf("history of %d samples over %d nodes: %d KiB", len(hist.list()), n, held>>10)
	if held > 2<<20 {
		t.Errorf("the history holds %d KiB at %d nodes, want under 2 MiB", held>>10, n)
	}
	for _, bad := range []string{"&limit=0", fmt.Sprintf("&limit=%d", MaxPageSize+1), "&offset=-1", "&limit=x"} {
		resp, body := get(t, web.URL+"?format=json"+bad)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "whole number") {
			t.Errorf("%s: HTTP %d %q, want 400 saying what the parameter takes", bad, resp.StatusCode, body)
		}
	}
}

// liveHeap is the live heap after a full collection, bytes.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
