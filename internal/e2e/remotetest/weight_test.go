package remotetest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/configserver"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/remote"
)

// TestWeightsFromTheConfigServer: the document's weights reach the source's set through lbd's
// config-server, a change of weight alone is a new set, and a start from the disk cache keeps
// them.
func TestWeightsFromTheConfigServer(t *testing.T) {
	doc := func(w int) *nodes.Document {
		return &nodes.Document{Schema: "s", Proxy: []string{"10.0.0.1:2883", "10.0.0.2:2883"},
			Weight: map[string]int{"10.0.0.2:2883": w}}
	}
	mem, hs := realConfigServer(t, doc(3))
	cacheDir := t.TempDir()
	cfg := remote.Config{Servers: []string{strings.TrimPrefix(hs.URL, "http://")}, Schema: "s", CacheDir: cacheDir,
		PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	weightOf := func(set nodes.Set, addr string) int {
		for _, n := range set.Nodes {
			if n.Addr == addr {
				return n.Weight
			}
		}
		t.Fatalf("%s not in %v", addr, set.Addrs())
		return 0
	}
	src, err := remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last nodes.Set
	set, err := src.Start(context.Background(), func(s nodes.Set) { mu.Lock(); last = s; mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	if weightOf(set, "10.0.0.1:2883") != 0 || weightOf(set, "10.0.0.2:2883") != 3 {
		t.Fatalf("Start = %+v, want weights 0 (default) and 3", set.Nodes)
	}
	if err := mem.Put(doc(5)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the new weight", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return last.Nodes != nil && weightOf(last, "10.0.0.2:2883") == 5
	})
	src.Close()

	// Every config-server gone: a new source starts from the cache, weights included.
	set = startFromCache(t, cfg, hs)
	if weightOf(set, "10.0.0.2:2883") != 5 {
		t.Fatalf("started from the cache with %+v, want weight 5 kept", set.Nodes)
	}
}

// realConfigServer runs lbd's config-server over doc, kept in memory, behind a test HTTP
// server; both close when the test ends. Put on the returned store changes what it serves.
func realConfigServer(t *testing.T, doc *nodes.Document) (*configserver.Memory, *httptest.Server) {
	t.Helper()
	mem, err := configserver.NewMemory(doc)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := configserver.New(context.Background(), configserver.Config{Backend: mem, ProbeInterval: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return mem, hs
}
