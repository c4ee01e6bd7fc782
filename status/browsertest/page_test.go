package browsertest

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.uber.org/goleak"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/status"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// chromium returns the browser's path, or skips (fails with LBD_REQUIRE_CHROMIUM) without one.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("LBD_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no Chromium found (chromium, chromium-browser, google-chrome) and LBD_REQUIRE_CHROMIUM is set")
	}
	t.Skip("no Chromium found: install Debian's chromium package (apt-get install chromium) to test the status page in a browser")
	return ""
}

// row is one node's row as the browser shows it: the text of its cells under the headers
// "open", "role", "weight / effective", "warm-up" and "passive signals".
type row struct {
	Node    string `json:"node"`
	State   string `json:"state"`
	Open    string `json:"open"`
	Role    string `json:"role"`
	Weight  string `json:"weight"`
	Warmup  string `json:"warmup"`
	Passive string `json:"passive"`
}

const readRows = `(() => {
	const heads = Array.from(document.querySelectorAll("#nodes thead th")).map(th => th.textContent);
	const cell = (tr, head) => heads.indexOf(head) < 0 ? "no column " + head : tr.children[heads.indexOf(head)].textContent;
	return Array.from(document.querySelectorAll("#nodes tbody tr[data-node]")).map(tr => ({
		node: tr.dataset.node, state: tr.dataset.state, open: cell(tr, "open"), role: cell(tr, "role"),
		weight: cell(tr, "weight / effective"), warmup: cell(tr, "warm-up"), passive: cell(tr, "passive signals")}));
})()`

// TestStatusPageInChromium loads the page of a three-proxy Connector in headless Chromium,
// checks that it shows every node, its chart and its header, and the role the role check found
// (the third proxy plays a replica, roleCheck=mysql), stops a proxy and waits, without
// a reload, for the page to show the node down and the transition with its reason (the
// page's own polling is what must bring them). A
// screenshot is written to the test's temp dir (and to LBD_STATUS_SCREENSHOT when set).
func TestStatusPageInChromium(t *testing.T) {
	browser := chromium(t)

	cl := lbdtest.NewCluster(t, 3)
	cl.Proxy(2).SetRole(lbdtest.Replica)
	c, err := lbd.NewConnector(cl.DSN("roleCheck=mysql"), lbd.WithLogger(slog.New(slog.DiscardHandler)),
		lbd.WithCheckHealthInterval(50*time.Millisecond), lbd.WithCheckHealthTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	for range 6 {
		cn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer cn.Close()
		if err := cn.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	page, err := status.New(c, status.Options{SampleInterval: 200 * time.Millisecond, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer page.Close()
	srv := httptest.NewServer(page)
	defer srv.Close()

	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(actx)
	defer cancelCtx()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/debug/lbd/"),
		chromedp.WaitVisible(chromedp.CSS(`#nodes tbody tr[data-node]`))); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	// The role check rides on the probes: the page must show each role once it has run.
	var rows []row
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows = evaluate[[]row](ctx, t, readRows)
		if len(rows) == 3 && rows[0].Role == "primary" && rows[1].Role == "primary" && rows[2].Role == "replica" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show the roles primary, primary, replica within 20 s: %+v", rows)
		}
		time.Sleep(100 * time.Millisecond)
	}
	summary := evaluate[string](ctx, t, `document.getElementById("summary").textContent`)
	lines := evaluate[int](ctx, t, `document.querySelectorAll("#chart polyline").length`)
	if len(rows) != 3 || lines != 3 {
		t.Fatalf("page shows %d rows and %d chart lines, want 3 and 3: %+v", len(rows), lines, rows)
	}
	for i, p := range cl.Proxies() {
		// States may flap on a loaded machine (probes every 50 ms); the connections held stay.
		if rows[i].Node != p.Addr() || rows[i].Open != "2" || (rows[i].State != "up" && rows[i].State != "down") {
			t.Errorf("row %d = %+v, want %s with 2 open", i, rows[i], p.Addr())
		}
		// Weight 1 (none given); a node listed at start is warm, but one that flapped warms up
		// again: the effective weight must follow the warm-up the row shows.
		var eff, warm float64
		if _, err := fmt.Sscanf(rows[i].Weight+" "+rows[i].Warmup, "1 / %f %f%%", &eff, &warm); err != nil ||
			warm < 0 || warm > 100 || math.Abs(eff-max(warm/100, 0.1)) > 0.011 || rows[i].Passive != "0" {
			t.Errorf("row %d = %+v (%v): want weight 1 / max(warm-up, 0.1), 0 passive signals", i, rows[i], err)
		}
	}
	if want := "balance mode connection"; !contains(summary, want) {
		t.Errorf("summary %q lacks %q", summary, want)
	}

	// A proxy stops; the page must follow on its own.
	victim := cl.Proxy(1)
	if err := victim.Stop(); err != nil {
		t.Fatal(err)
	}
	var recent string
	deadline = time.Now().Add(20 * time.Second)
	for {
		rows = evaluate[[]row](ctx, t, readRows)
		recent = evaluate[string](ctx, t, `document.querySelector("#recent tbody").textContent`)
		// Only a stopped proxy refuses connections: that transition is the one after the stop.
		if len(rows) == 3 && rows[1].State == "down" && contains(recent, "probe failed: dial tcp "+victim.Addr()+": connect: connection refused") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page did not show %s down within 20 s: rows %+v, recent %q", victim.Addr(), rows, recent)
		}
		time.Sleep(100 * time.Millisecond)
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 makes a PNG
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "status.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if dst := os.Getenv("LBD_STATUS_SCREENSHOT"); dst != "" {
		if err := os.WriteFile(dst, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(png) < 1000 {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
}

// evaluate runs a script in the page and returns its value.
func evaluate[T any](ctx context.Context, t *testing.T, script string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](script))
	if err != nil {
		t.Fatalf("evaluate %s: %v", script, err)
	}
	return v
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
