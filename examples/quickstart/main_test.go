package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

func TestMain(m *testing.M) {
	quietDriver()
	goleak.VerifyTestMain(m)
}

// -h lists the demo's flags and nothing else: the binary links the proxies' SQL engine, whose
// packages register flags of their own on the global flag set (the test binary holds them too).
func TestHelpListsTheDemosFlags(t *testing.T) {
	fs, _ := flags(&config{})
	var usage bytes.Buffer
	fs.SetOutput(&usage)
	fs.Usage() // what -h prints before it exits
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(usage.String(), -1) {
		listed = append(listed, m[1])
	}
	if want := []string{"balance", "dsn", "duration", "status", "workers"}; !slices.Equal(listed, want) {
		t.Fatalf("-h lists %v, want %v:\n%s", listed, want, usage.String())
	}
}

// TestQuickstart runs the demo as `go run` does, shortened: the fault schedule scales with
// the duration. Eight seconds leave the fourth proxy (joining at 5.6 s) two rebalancing rounds or
// two to get connections.
func TestQuickstart(t *testing.T) {
	if os.Getenv("LBD_TEST_LONG") != "1" {
		t.Skip("a long run: set LBD_TEST_LONG=1 to run it (.ci/run does)")
	}
	for _, mode := range []lbd.BalanceMode{lbd.BalanceConnection, lbd.BalanceStatement} {
		t.Run(mode.String(), func(t *testing.T) { quickstart(t, mode) })
	}
}

func quickstart(t *testing.T, mode lbd.BalanceMode) {
	out := &syncBuffer{}
	sum, err := run(context.Background(), config{Duration: 8 * time.Second, Workers: 16, Log: out, Balance: mode}, out)
	t.Log("demo output:\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, sum)
	if len(sum.Proxies) != 4 {
		t.Fatalf("summary lists %d proxies, want 4 (3 at start, 1 added)", len(sum.Proxies))
	}
	for _, p := range sum.Proxies {
		if p.State != "up" {
			t.Errorf("proxy %s is %s at the end, want up", p.Addr, p.State)
		}
		if app := p.Statements - int64(p.Probes); app <= 0 {
			t.Errorf("proxy %s relayed %d statements, %d of them probes: no application statement",
				p.Addr, p.Statements, p.Probes)
		}
	}
	for _, banner := range []string{"-- stopping proxy", "-- starting proxy", "-- adding proxy", "== summary"} {
		if !strings.Contains(out.String(), banner) {
			t.Errorf("output lacks %q", banner)
		}
	}
}

// TestQuickstartDSN runs the demo's -dsn mode, with in-memory proxies standing in for real
// ones: no faults, no statement counts, and a table dropped at the end.
func TestQuickstartDSN(t *testing.T) {
	cluster := lbdtest.NewCluster(t, 2)
	out := &syncBuffer{}
	type result struct {
		sum summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := run(context.Background(), config{DSN: cluster.DSN(""), Duration: 3 * time.Second, Workers: 4, Log: out, Status: "127.0.0.1:0"}, out)
		done <- result{sum, err}
	}()
	// The status page serves while the demo runs, at the address it prints.
	statusURL := regexp.MustCompile(`Status page: (http://127\.0\.0\.1:\d+/debug/lbd/) `)
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(5 * time.Millisecond) {
		if m := statusURL.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no status page's address in the output after 10s:\n%s", out.String())
		}
	}
	resp, err := http.Get(url + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Balance string
		Nodes   []struct{ Addr string }
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || page.Balance != "connection" || len(page.Nodes) != 2 {
		t.Errorf("status page JSON: %+v, %v; want balance connection and 2 nodes", page, err)
	}
	r := <-done
	sum, err := r.sum, r.err
	t.Log("demo output:\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Balance mode: connection") || !strings.Contains(out.String(), "-workers 1") {
		t.Error("the header does not name the balance mode or say how to see the modes differ")
	}
	checkRows(t, sum)
	if !strings.Contains(out.String(), "Statements per proxy are unavailable") {
		t.Error("output does not say that statements per proxy are unavailable")
	}
	if strings.Contains(out.String(), "-- stopping proxy") {
		t.Error("faults were injected into proxies given by -dsn")
	}
	for _, p := range sum.Proxies {
		if p.Statements != -1 {
			t.Errorf("proxy %s: %d statements reported, want -1 (unknown)", p.Addr, p.Statements)
		}
	}
	for _, p := range cluster.Proxies() {
		if p.Statements() == 0 {
			t.Errorf("proxy %s relayed no statement", p.Addr())
		}
	}
}

// TestQuickstartInterrupted checks that a cancelled run still ends cleanly with a summary.
func TestQuickstartInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	out := &syncBuffer{}
	sum, err := run(ctx, config{Duration: time.Minute, Workers: 4, Log: out}, out)
	t.Log("demo output:\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, sum)
	if !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "== summary") {
		t.Error("output lacks the interruption notice or the summary")
	}
}

func checkRows(t *testing.T, sum summary) {
	t.Helper()
	if sum.Written == 0 {
		t.Error("no row written")
	}
	if sum.Counted != sum.Written {
		t.Errorf("table holds %d rows, workload wrote %d", sum.Counted, sum.Written)
	}
	if sum.ReadBack == 0 || sum.ReadBack > sum.Written {
		t.Errorf("%d rows read back of %d written", sum.ReadBack, sum.Written)
	}
}

// syncBuffer is a bytes.Buffer that lbd's logger and the demo can write to at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
