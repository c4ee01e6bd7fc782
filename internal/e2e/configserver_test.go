package e2e

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestOneConfigServerFails is lb-driver's scenarios 12, 14 and 15: of two config-servers over
// the same etcd, one goes down (its port refuses connections) or hangs (a frozen process, or
// one whose packets are dropped: connections open, no answer). The application's traffic must
// not notice, a change written to etcd must still arrive through the other config-server, and
// an application restarted meanwhile must start.
func TestOneConfigServerFails(t *testing.T) {
	testkit.SkipUnlessLong(t)
	for _, tc := range []struct {
		name  string
		fault func(*configServer)
	}{
		{"down", (*configServer).stop},
		{"hung", (*configServer).hang},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, 2)
			p := r.p
			bad, good := r.cs[0], r.cs[1] // the client asks the first one first
			a := r.mustOpenApp(t, r.servers(), t.TempDir())
			a.expectNodes(t, "start", p[0], p[1])
			w := startWorkload(t, a.db)
			testkit.WaitFor(t, settleWithin, "p0 and p1 to hold connections", func() bool { return a.serving(p[0]) && a.serving(p[1]) })
			w.Progress(t, settleWithin, 100)

			tc.fault(bad)
			testkit.WaitFor(t, settleWithin, "the application to turn to the other config-server", func() bool {
				return len(a.logs.find(slog.LevelWarn, "config-server failed; the next one answered", "server="+bad.addr, "answered_by="+good.addr)) > 0
			})
			if tc.name == "hung" && bad.held.Load() == 0 {
				t.Fatal("the hung config-server held no request")
			}
			good.waitPolls(t, 5)
			w.Progress(t, settleWithin, 100)
			w.ExpectNoErrors(t, "after the fault")
			a.expectNodes(t, "after the fault", p[0], p[1])

			// A change is still followed, through the other config-server.
			r.setProxies(p[0], p[1], p[2])
			testkit.WaitFor(t, settleWithin, "p2 to be up and hold connections", func() bool { return a.serving(p[2]) })
			w.Progress(t, settleWithin, 100)

			// An application restarted now starts from the other config-server (its cache is
			// empty, so the list cannot come from there).
			start := time.Now()
			b := r.mustOpenApp(t, r.servers(), t.TempDir())
			t.Logf("a new Connector started in %v with one config-server %s", time.Since(start).Round(time.Millisecond), tc.name)
			b.expectNodes(t, "restarted application", p[0], p[1], p[2])
			if l := b.logs.find(slog.LevelWarn, "cache"); len(l) > 0 {
				t.Errorf("the restarted application used its cache: %q", l)
			}
			b.run(t, 20)

			w.Stop()
			w.ExpectNoErrors(t, "whole run")
		})
	}
}

// TestAllConfigServersDown is lb-driver's scenario 13. There, an application cannot restart
// while every config-server is down; lbd keeps the last list on disk, so a restart starts from
// it (with a warning) and serves traffic. Without the cache the restart fails, as in lb-driver.
func TestAllConfigServersDown(t *testing.T) {
	r := newRig(t, 2, 2)
	p := r.p
	cacheDir := t.TempDir()

	a := r.mustOpenApp(t, r.servers(), cacheDir)
	a.expectNodes(t, "first run", p[0], p[1])
	a.run(t, 20)
	if err := a.db.Close(); err != nil {
		t.Fatal(err)
	}
	if files, err := os.ReadDir(cacheDir); err != nil || len(files) == 0 {
		t.Fatalf("the first run left no cache in its cache directory (%d files, %v)", len(files), err)
	}

	for _, cs := range r.cs {
		cs.stop()
	}

	// Without a cache: no list anywhere, the Connector cannot start.
	if _, err := r.openApp(t, r.servers(), t.TempDir()); err == nil {
		t.Fatal("a Connector started with every config-server down and an empty cache")
	} else if !strings.Contains(err.Error(), r.cs[0].addr) || !strings.Contains(err.Error(), r.cs[1].addr) {
		t.Errorf("the start error does not name both config-servers: %v", err)
	} else {
		t.Logf("without a cache, as expected: %v", err)
	}

	// With the cache of the first run.
	b := r.mustOpenApp(t, r.servers(), cacheDir)
	// The line names the cache file it read ("cached", not "cache": a failed cache write is
	// also a WARN that mentions the cache).
	warns := b.logs.find(slog.LevelWarn, "cached", cacheDir)
	if len(warns) == 0 {
		t.Errorf("no WARN line says the list came from the cache in %s; lines: %q", cacheDir, b.logs.all())
	} else {
		t.Logf("warning: %s", warns[0])
	}
	b.expectNodes(t, "started from the cache", p[0], p[1])
	w := startWorkload(t, b.db)
	testkit.WaitFor(t, settleWithin, "p0 and p1 to hold connections", func() bool { return b.serving(p[0]) && b.serving(p[1]) })
	w.Progress(t, settleWithin, 300)
	w.Stop()
	w.ExpectNoErrors(t, "started from the cache")
	b.expectNodes(t, "end", p[0], p[1])
}
