package etcd_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/etcd"
)

const testKey = "/lbd/schemas/im_user"

// newSource builds a source on srv's key with fast timers, logging into l.
func newSource(t testing.TB, srv *etcdServer, l *logs, refresh time.Duration) *etcd.Source {
	t.Helper()
	return newSourceClock(t, srv, l, refresh, nil)
}

// newSourceClock is newSource on clk (nil: the wall clock).
func newSourceClock(t testing.TB, srv *etcdServer, l *logs, refresh time.Duration, clk nodes.Clock) *etcd.Source {
	t.Helper()
	src, err := etcd.New(etcd.Config{
		Endpoints:       []string{srv.Endpoint()},
		Key:             testKey,
		DialTimeout:     time.Second,
		RefreshInterval: refresh,
		Logger:          l.Logger(),
		Clock:           clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func TestStartAndFollow(t *testing.T) {
	srv := startEtcd(t)
	rev := srv.put(testKey, doc("im_user", "10.0.0.1:2883", "10.0.0.2:2883"))
	l := &logs{}
	src := newSource(t, srv, l, time.Hour) // changes must come from the watch alone
	var got updates
	set, err := src.Start(context.Background(), got.Push)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.0.0.1:2883", "10.0.0.2:2883"}; !slices.Equal(set.Addrs(), want) || set.Version != strconv.FormatInt(rev, 10) {
		t.Fatalf("Start = %v version %q, want %v version %d", set.Addrs(), set.Version, want, rev)
	}

	rev = srv.put(testKey, doc("im_user", "10.0.0.1:2883", "10.0.0.2:2883", "10.0.0.3:2883"))
	waitFor(t, 5*time.Second, "the three-proxy list", func() bool { return got.Len() == 1 })
	if s := got.Last(); len(s.Nodes) != 3 || s.Version != strconv.FormatInt(rev, 10) {
		t.Fatalf("update %v version %q, want three nodes at revision %d", s.Addrs(), s.Version, rev)
	}

	// The same list in another order, then a new one: only the new one is passed on. The watch
	// delivers in order, so an update for the reordered list would come before the new one's,
	// and one more write shows that the new list was passed on once.
	srv.put(testKey, doc("im_user", "10.0.0.3:2883", "10.0.0.1:2883", "10.0.0.2:2883"))
	srv.put(testKey, doc("im_user", "10.0.0.4:2883"))
	alone := func(addr string) func() bool {
		return func() bool { return slices.Equal(got.Last().Addrs(), []string{addr}) }
	}
	waitFor(t, 5*time.Second, "the one-proxy list", alone("10.0.0.4:2883"))
	if n := got.Len(); n != 2 {
		t.Fatalf("%d updates when the list with 10.0.0.4 alone came, want 2", n)
	}
	srv.put(testKey, doc("im_user", "10.0.0.5:2883"))
	waitFor(t, 5*time.Second, "the next one-proxy list", alone("10.0.0.5:2883"))
	if n := got.Len(); n != 3 {
		t.Fatalf("%d updates when the list with 10.0.0.5 alone came, want 3", n)
	}
	if n := sourceGoroutines(); n == 0 {
		t.Fatal("no goroutine of the source found while it runs")
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if n := sourceGoroutines(); n != 0 {
		t.Fatalf("%d goroutines of the source outlive Close", n)
	}
	if err := src.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := src.Start(context.Background(), got.Push); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	if l.Count("lbd: etcd") != 0 {
		t.Fatalf("unexpected log lines:\n%s", l.All())
	}
}

func TestStartFails(t *testing.T) {
	srv := startEtcd(t)
	cases := []struct {
		name, value string // value "" leaves the key absent
		want        string
	}{
		{"missing key", "", "does not exist"},
		{"not JSON", "{proxy", "not valid JSON"},
		{"empty list", `{"schema":"im_user","proxy":[]}`, "empty node list"},
		{"bad address", doc("im_user", "10.0.0.1"), "not host:port"},
		{"other schema", doc("im_order", "10.0.0.1:2883"), `stored under "im_user"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv.del(testKey)
			if c.value != "" {
				srv.put(testKey, c.value)
			}
			src := newSource(t, srv, &logs{}, time.Hour)
			_, err := src.Start(context.Background(), func(nodes.Set) { t.Error("update called") })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), testKey) {
				t.Fatalf("Start = %v, want an error naming the key and saying %q", err, c.want)
			}
			src.Close()
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		src, err := etcd.New(etcd.Config{Endpoints: []string{freeAddr(t)}, Key: testKey, DialTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		start := time.Now()
		if _, err := src.Start(context.Background(), func(nodes.Set) {}); err == nil {
			t.Fatal("Start against no etcd succeeded")
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("Start took %v, want about the 300ms dial timeout", took)
		}
	})
}

// An invalid document keeps the list and is logged once, however often the key is read again;
// a later valid document is applied.
func TestInvalidDocumentKeepsTheList(t *testing.T) {
	srv := startEtcd(t)
	srv.put(testKey, doc("im_user", "10.0.0.1:2883", "10.0.0.2:2883"))
	l := &logs{}
	reads := &fullReads{}
	src := newSourceClock(t, srv, l, 50*time.Millisecond, reads)
	var got updates
	if _, err := src.Start(context.Background(), got.Push); err != nil {
		t.Fatal(err)
	}
	rev := srv.put(testKey, `{"schema":"im_user","proxy":["10.0.0.1:2883",`)
	waitFor(t, 5*time.Second, "the invalid-document log line", func() bool { return l.Count("invalid document") > 0 })
	reads.wait(t, 6, "six more full reads of the same bad document")
	lines := l.Find("invalid document")
	if len(lines) != 1 {
		t.Fatalf("%d invalid-document lines, want 1:\n%s", len(lines), l.All())
	}
	if a := lines[0].Attrs; a["key"] != testKey || a["revision"] != strconv.FormatInt(rev, 10) || !strings.Contains(a["reason"], "JSON") {
		t.Fatalf("log line %v lacks key, revision %d or reason", a, rev)
	}
	if got.Len() != 0 {
		t.Fatalf("an invalid document produced update %v", got.Last().Addrs())
	}

	srv.put(testKey, doc("im_user", "10.0.0.3:2883"))
	waitFor(t, 5*time.Second, "the valid document's list", func() bool { return got.Len() == 1 })
	if !slices.Equal(got.Last().Addrs(), []string{"10.0.0.3:2883"}) {
		t.Fatalf("update %v, want 10.0.0.3:2883", got.Last().Addrs())
	}
	if n := l.Count("valid document again"); n != 1 {
		t.Fatalf("%d recovery lines, want 1:\n%s", n, l.All())
	}
}

func TestDeletedKeyKeepsTheList(t *testing.T) {
	srv := startEtcd(t)
	srv.put(testKey, doc("im_user", "10.0.0.1:2883"))
	l := &logs{}
	reads := &fullReads{}
	src := newSourceClock(t, srv, l, 50*time.Millisecond, reads)
	var got updates
	if _, err := src.Start(context.Background(), got.Push); err != nil {
		t.Fatal(err)
	}
	srv.del(testKey)
	waitFor(t, 5*time.Second, "the deleted-key log line", func() bool { return l.Count("key deleted") > 0 })
	reads.wait(t, 6, "six more full reads of the deleted key")
	if n := l.Count("key deleted"); n != 1 || got.Len() != 0 {
		t.Fatalf("%d deleted-key lines and %d updates, want 1 and 0:\n%s", n, got.Len(), l.All())
	}
	// The same list written back: nothing to pass on, but the condition is over.
	srv.put(testKey, doc("im_user", "10.0.0.1:2883"))
	waitFor(t, 5*time.Second, "the recovery line", func() bool { return l.Count("valid document again") == 1 })
	if got.Len() != 0 {
		t.Fatalf("the unchanged list was passed on: %v", got.Last().Addrs())
	}
}

// A watch that etcd cancels because the history it needs was compacted is replaced: the key is
// read again and a new watch follows later changes.
func TestCompactedWatchIsReplaced(t *testing.T) {
	srv := startEtcd(t)
	srv.put(testKey, doc("im_user", "10.0.0.1:2883"))
	fw := startForwarder(t, srv.Endpoint())
	l := &logs{}
	src, err := etcd.New(etcd.Config{
		Endpoints:       []string{fw.Addr()},
		Key:             testKey,
		DialTimeout:     time.Second,
		RefreshInterval: time.Hour, // only the watch can bring changes
		Logger:          l.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var got updates
	if _, err := src.Start(context.Background(), got.Push); err != nil {
		t.Fatal(err)
	}
	// A change only the watch can bring shows that the watch is set up.
	srv.put(testKey, doc("im_user", "10.0.0.5:2883"))
	waitFor(t, 5*time.Second, "the first change through the watch", func() bool {
		return slices.Equal(got.Last().Addrs(), []string{"10.0.0.5:2883"})
	})

	fw.setCut(true) // the source's client loses etcd; writes and a compaction go past it
	srv.put(testKey, doc("im_user", "10.0.0.2:2883"))
	srv.compact(srv.put(testKey, doc("im_user", "10.0.0.3:2883")))
	fw.setCut(false)
	waitFor(t, 10*time.Second, "the list written while cut off", func() bool {
		return slices.Equal(got.Last().Addrs(), []string{"10.0.0.3:2883"})
	})
	if ended := l.Find("watch ended"); len(ended) == 0 || !strings.Contains(ended[0].Attrs["reason"], "compacted") {
		t.Fatalf("no log of the compacted watch:\n%s", l.All())
	}

	srv.put(testKey, doc("im_user", "10.0.0.4:2883"))
	waitFor(t, 5*time.Second, "a change through the new watch", func() bool {
		return slices.Equal(got.Last().Addrs(), []string{"10.0.0.4:2883"})
	})
	if n := got.Len(); n != 3 {
		t.Fatalf("%d updates, want 3", n)
	}
}

// TestWeightsFollow: the document's weights reach the set, and a change of weight alone is a
// new set.
func TestWeightsFollow(t *testing.T) {
	srv := startEtcd(t)
	srv.put(testKey, `{"schema":"im_user","proxy":["10.0.0.1:2883","10.0.0.2:2883"],"weight":{"10.0.0.2:2883":3}}`)
	src := newSource(t, srv, &logs{}, time.Hour)
	var got updates
	set, err := src.Start(context.Background(), got.Push)
	if err != nil {
		t.Fatal(err)
	}
	if set.Nodes[0].Weight != 0 || set.Nodes[1].Weight != 3 {
		t.Fatalf("Start = %+v, want weights 0 (default) and 3", set.Nodes)
	}
	srv.put(testKey, `{"schema":"im_user","proxy":["10.0.0.1:2883","10.0.0.2:2883"],"weight":{"10.0.0.2:2883":5}}`)
	waitFor(t, 5*time.Second, "the new weight", func() bool { return got.Len() == 1 })
	if w := got.Last().Nodes[1].Weight; w != 5 {
		t.Fatalf("update has weight %d for 10.0.0.2:2883, want 5", w)
	}
}

// TestRolesFollow: the document's roles reach the set, and a change of role alone (a
// switchover written into the document) is a new set.
func TestRolesFollow(t *testing.T) {
	srv := startEtcd(t)
	srv.put(testKey, `{"schema":"im_user","proxy":["10.0.0.1:2883","10.0.0.2:2883"],"role":{"10.0.0.1:2883":"primary","10.0.0.2:2883":"replica"}}`)
	src := newSource(t, srv, &logs{}, time.Hour)
	var got updates
	set, err := src.Start(context.Background(), got.Push)
	if err != nil {
		t.Fatal(err)
	}
	if set.Nodes[0].Role != nodes.RolePrimary || set.Nodes[1].Role != nodes.RoleReplica {
		t.Fatalf("Start = %+v, want roles primary and replica", set.Nodes)
	}
	srv.put(testKey, `{"schema":"im_user","proxy":["10.0.0.1:2883","10.0.0.2:2883"],"role":{"10.0.0.1:2883":"replica","10.0.0.2:2883":"primary"}}`)
	waitFor(t, 5*time.Second, "the swapped roles", func() bool { return got.Len() == 1 })
	if n := got.Last().Nodes; n[0].Role != nodes.RoleReplica || n[1].Role != nodes.RolePrimary {
		t.Fatalf("update = %+v, want roles replica and primary", n)
	}
}
