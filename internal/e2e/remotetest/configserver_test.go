package remotetest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/configserver"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/remote"
)

// The source against lbd's own config-server: the AZ comes from the reported IP (no az
// configured), changes published by the backend are followed, and the AZ fallback works
// through policy=default.
func TestWithTheConfigServerPackage(t *testing.T) {
	cl := lbdtest.NewCluster(t, 4)
	a := cl.Addrs()
	doc := func(az ...string) *nodes.Document {
		return &nodes.Document{
			Schema: "im_user", AuthEnable: true, APIKeys: []string{"k1"}, Proxy: a,
			AZList: map[string][]string{"az1": {"127.0.0.0/8"}}, AZProxy: map[string][]string{"az1": az},
			ProxyPolicy: nodes.PolicyAZ,
		}
	}
	mem, err := configserver.NewMemory(doc(a[0], a[1]))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := configserver.New(context.Background(), configserver.Config{
		Backend: mem, ProbeInterval: -1, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	logs := &logRecorder{}
	db, c, src := openWithSource(t, cl, remote.Config{
		Servers: []string{strings.TrimPrefix(hs.URL, "http://")}, Schema: "im_user", APIKey: "k1",
		CacheDir: t.TempDir(), PollInterval: 100 * time.Millisecond, AZRefreshInterval: 300 * time.Millisecond,
		HealthTick: 10 * time.Millisecond, Logger: logs.logger(),
	}, logs)
	defer db.Close()
	var got []string
	for _, n := range c.Stats().Nodes {
		got = append(got, n.Addr)
	}
	slices.Sort(got) // the config-server sorts its lists, as lb-driver's does
	if want := slices.Sorted(slices.Values(a[:2])); !slices.Equal(got, want) {
		t.Fatalf("nodes %v, want the AZ set %v found through the reported IP", got, want)
	}

	w := startWorkload(t, db, 2)
	cl.Proxy(0).Stop()
	cl.Proxy(1).Stop()
	var switched time.Time
	waitFor(t, 10*time.Second, "the degraded set", func() bool {
		n0, _ := c.Stats().Node(a[0])
		if src.Degraded() && isUp(c, a[2]) && n0.Standby {
			switched = time.Now()
			return true
		}
		return false
	})
	cl.Proxy(0).Start()
	cl.Proxy(1).Start()
	waitFor(t, 15*time.Second, "back to the AZ set", func() bool {
		_, has3 := c.Stats().Node(a[3])
		return !src.Degraded() && !has3
	})

	// A change the backend publishes reaches the Connector.
	if err := mem.Put(doc(a[0])); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the smaller AZ set", func() bool {
		_, has1 := c.Stats().Node(a[1])
		return !has1
	})
	ops := w.Stop()
	if errs, total := failedSince(ops, switched); len(errs) > 0 {
		t.Errorf("%d of %d statements failed after the switch; first: %v", len(errs), total, errs[0])
	}
	if n := logs.count(failLine); n != 0 {
		logs.dump(t)
		t.Errorf("%d failed rounds against the config-server", n)
	}
}
