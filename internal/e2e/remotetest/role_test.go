package remotetest

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/remote"
)

// TestRolesFromTheConfigServer: the document's roles reach the source's set through lbd's
// config-server, a switchover written into the document (roles swapped, same proxies) is a new
// set, and a start from the disk cache while every config-server is down keeps the last roles.
func TestRolesFromTheConfigServer(t *testing.T) {
	doc := func(primary, replica string) *nodes.Document {
		return &nodes.Document{Schema: "s", Proxy: []string{"10.0.0.1:2883", "10.0.0.2:2883", "10.0.0.3:2883"},
			Role: map[string]string{primary: "primary", replica: "replica"}}
	}
	mem, hs := realConfigServer(t, doc("10.0.0.1:2883", "10.0.0.2:2883"))
	cacheDir := t.TempDir()
	cfg := remote.Config{Servers: []string{strings.TrimPrefix(hs.URL, "http://")}, Schema: "s", CacheDir: cacheDir,
		PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	rolesOf := func(set nodes.Set) string {
		var b strings.Builder
		for _, n := range set.Nodes {
			b.WriteString(n.Addr + "=" + n.Role.String() + " ")
		}
		return strings.TrimSpace(b.String())
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
	if got, want := rolesOf(set), "10.0.0.1:2883=primary 10.0.0.2:2883=replica 10.0.0.3:2883=unknown"; got != want {
		t.Fatalf("Start = %s, want %s", got, want)
	}
	if err := mem.Put(doc("10.0.0.2:2883", "10.0.0.1:2883")); err != nil {
		t.Fatal(err)
	}
	swapped := "10.0.0.1:2883=replica 10.0.0.2:2883=primary 10.0.0.3:2883=unknown"
	waitFor(t, 5*time.Second, "the swapped roles", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return rolesOf(last) == swapped
	})
	src.Close()

	// Every config-server gone: a new source starts from the cache, roles included.
	set = startFromCache(t, cfg, hs)
	if got := rolesOf(set); got != swapped {
		t.Fatalf("started from the cache with %s, want %s", got, swapped)
	}
}

// TestRolesSteerAConnector: lbd's config-server serves the roles over HTTP, lbremote hands them
// to a Connector with target=primary and no role check. Every new connection goes to the
// document's primary; a switchover written into the document moves them to the new one and
// retires the old primary's; a Connector started while the config-server is down takes the
// last roles from the disk cache and still sends its connections to the primary.
func TestRolesSteerAConnector(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	a := cl.Addrs()
	doc := func(primary, replica string) *nodes.Document {
		return &nodes.Document{Schema: "s", Proxy: a, Role: map[string]string{primary: "primary", replica: "replica"}}
	}
	mem, hs := realConfigServer(t, doc(a[0], a[1]))
	cfg := remote.Config{Servers: []string{strings.TrimPrefix(hs.URL, "http://")}, Schema: "s", CacheDir: t.TempDir(),
		PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	open := func() (*sql.DB, *lbd.Connector) {
		t.Helper()
		src, err := remote.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := testkit.Started(lbd.NewConnector(sourceDSN(cl)+"&target=primary",
			lbd.WithLogger(slog.New(slog.DiscardHandler)), lbd.WithWarmup(0), lbd.WithSource(src)))
		if err != nil {
			t.Fatalf("NewConnector: %v", err)
		}
		db := sql.OpenDB(c)
		db.SetMaxIdleConns(8)
		t.Cleanup(func() { db.Close() })
		return db, c
	}
	// onlyOn checks out four connections at once and checks that they all opened on want.
	onlyOn := func(db *sql.DB, c *lbd.Connector, want string) {
		t.Helper()
		var conns []*sql.Conn
		for range 4 {
			cn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := cn.PingContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, cn)
		}
		for _, addr := range a {
			ns, _ := c.Stats().Node(addr)
			if addr == want && ns.Open != 4 || addr != want && ns.Open != 0 {
				t.Errorf("%s (role %s) has %d open connections, want 4 on the primary %s and none elsewhere", addr, ns.Role, ns.Open, want)
			}
		}
		for _, cn := range conns {
			cn.Close()
		}
	}

	db, c := open()
	onlyOn(db, c, a[0])
	if err := mem.Put(doc(a[1], a[0])); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the old primary's connections to be retired", func() bool {
		ns, _ := c.Stats().Node(a[0])
		return ns.Role == nodes.RoleReplica && ns.Open == 0
	})
	onlyOn(db, c, a[1])
	db.Close()

	hs.Close() // every config-server gone: the next Connector starts from the cache
	db2, c2 := open()
	if ns, _ := c2.Stats().Node(a[1]); ns.Role != nodes.RolePrimary {
		t.Fatalf("started from the cache with %s as %s, want primary", a[1], ns.Role)
	}
	onlyOn(db2, c2, a[1])
}
