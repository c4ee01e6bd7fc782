package browsertest

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/status"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

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

// row is one node's row as the browser shows it.
type row struct {
	Node  string `json:"node"`
	State string `json:"state"`
	Open  string `json:"open"`
}

const readRows = `Array.from(document.querySelectorAll("#nodes tbody tr[data-node]")).map(tr => ({
	node: tr.dataset.node, state: tr.dataset.state, open: tr.children[2].textContent}))`

// TestStatusPageInChromium loads the page of a three-proxy Connector in headless Chromium,
// checks that it shows every node, its chart and its header, stops a proxy and waits, without
// a reload, for the page to show the node down and the transition with its reason (the
// page's own polling is what must bring them). A
// screenshot is written to the test's temp dir (and to LBD_STATUS_SCREENSHOT when set).
func TestStatusPageInChromium(t *testing.T) {
	browser := chromium(t)

	cl := lbdtest.NewCluster(t, 3)
	c, err := lbd.NewConnector(cl.DSN(""), lbd.WithLogger(slog.New(slog.DiscardHandler)),
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
	rows := evaluate[[]row](ctx, t, readRows)
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
	deadline := time.Now().Add(20 * time.Second)
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
