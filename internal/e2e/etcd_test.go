package e2e

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestEtcdDown is lb-driver's scenarios 16 to 19 with the single etcd member stopped (the
// worst case: every etcd member gone). The config-server keeps serving the documents it read,
// the application keeps its list and its traffic, and an application restarted meanwhile starts
// from the config-server's memory. Restarting the config-server itself fails, as in lb-driver:
// it has nothing to read.
func TestEtcdDown(t *testing.T) {
	testkit.SkipUnlessLong(t)
	r := newRig(t, 2, 1)
	p := r.p
	cs := r.cs[0]
	a := r.mustOpenApp(t, r.servers(), t.TempDir())
	a.expectNodes(t, "start", p[0], p[1])
	w := startWorkload(t, a.db)
	testkit.WaitFor(t, settleWithin, "p0 and p1 to hold connections", func() bool { return a.serving(p[0]) && a.serving(p[1]) })
	w.Progress(t, settleWithin, 100)

	r.etcd.stop()
	testkit.WaitFor(t, settleWithin, "the config-server to find etcd unreachable", func() bool {
		return len(cs.logs.find(slog.LevelError, "cannot read etcd")) > 0
	})
	if code, list := cs.served(t); code != 200 || !slices.Equal(list, slices.Sorted(slices.Values(p[:2]))) {
		t.Fatalf("with etcd down the config-server answers code %d, list %v; want 200 and %v", code, list, p[:2])
	}
	cs.waitPolls(t, 5)
	w.Progress(t, settleWithin, 100)
	w.ExpectNoErrors(t, "etcd down")
	a.expectNodes(t, "etcd down", p[0], p[1])

	// An application restart: the list comes from the config-server's memory (the new
	// application's cache is empty).
	b := r.mustOpenApp(t, r.servers(), t.TempDir())
	b.expectNodes(t, "application restarted with etcd down", p[0], p[1])
	if l := b.logs.find(slog.LevelWarn, "cache"); len(l) > 0 {
		t.Errorf("the restarted application used its cache: %q", l)
	}
	b.run(t, 20)

	// A config-server restart: its first read of etcd fails, so it does not start.
	if err := tryConfigServer(t, r.etcd.endpoint); err == nil {
		t.Error("a config-server started with etcd down")
	} else {
		t.Logf("config-server restart with etcd down, as expected: %v", err)
	}

	w.Progress(t, settleWithin, 100)
	w.Stop()
	w.ExpectNoErrors(t, "whole run")
	a.expectNodes(t, "end", p[0], p[1])
}
