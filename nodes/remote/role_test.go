package remote

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
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
	cfg := Config{Servers: []string{strings.TrimPrefix(hs.URL, "http://")}, Schema: "s", CacheDir: cacheDir,
		PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	rolesOf := func(set nodes.Set) string {
		var b strings.Builder
		for _, n := range set.Nodes {
			b.WriteString(n.Addr + "=" + n.Role.String() + " ")
		}
		return strings.TrimSpace(b.String())
	}
	src, err := New(cfg)
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
	hs.Close()
	src2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	set, err = src2.Start(context.Background(), func(nodes.Set) {})
	if err != nil {
		t.Fatal(err)
	}
	if got := rolesOf(set); got != swapped {
		t.Fatalf("started from the cache with %s, want %s", got, swapped)
	}
}

func TestDecodeRolesRefusesBadAnswers(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unlisted": {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.2:1":"primary"}}`, "which the answer does not list"},
		"name":     {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":"writer"}}`, `role "writer" for "10.0.0.1:1" is not "primary", "replica" or "standby"`},
		"empty":    {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":""}}`, `role "" for`},
		"number":   {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":1}}`, `role 1 for`},
		"bad key":  {`{"code":200,"data":["10.0.0.1:1"],"role":{"x":"primary"}}`, `role for "x"`},
		"twice":    {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":"primary","10.0.0.1:01":"replica"}}`, "two roles"},
	} {
		_, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(tc.body), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
	a, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(`{"code":200,"data":["10.0.0.1:1","10.0.0.2:1"],"role":{"10.0.0.2:01":"Standby"}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.roles) != 1 || a.roles["10.0.0.2:1"] != nodes.RoleStandby {
		t.Fatalf("answer roles %v, want only 10.0.0.2:1 standby", a.roles)
	}
}

// TestCacheRoleRoundTrip: save and load keep the roles; a cache file whose roles were altered
// into something no config-server sends is refused whole.
func TestCacheRoleRoundTrip(t *testing.T) {
	c := newDiskCache(t.TempDir(), "s", []server{{base: "http://cs:1"}})
	list := []string{"10.0.0.1:1", "10.0.0.2:1"}
	roles := map[string]nodes.Role{"10.0.0.1:1": nodes.RolePrimary, "10.0.0.2:1": nodes.RoleStandby}
	if err := c.save("default", nodes.ListMD5(list), list, nil, roles, time.Now()); err != nil {
		t.Fatal(err)
	}
	cf, path, err := c.load("default")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.roles) != 2 || cf.roles["10.0.0.1:1"] != nodes.RolePrimary || cf.roles["10.0.0.2:1"] != nodes.RoleStandby {
		t.Fatalf("loaded roles %v, want %v", cf.roles, roles)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"name":     strings.Replace(string(data), `"standby"`, `"writer"`, 1),
		"unknown":  strings.Replace(string(data), `"standby"`, `"unknown"`, 1),
		"unlisted": strings.Replace(string(data), `"10.0.0.2:1": "standby"`, `"10.0.0.9:1": "standby"`, 1),
	} {
		if bad == string(data) {
			t.Fatalf("%s: the replacement did not apply to\n%s", name, data)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), filepath.Base(path)), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.load("default"); err == nil || !strings.Contains(err.Error(), "holds a role") {
			t.Errorf("%s: load = %v, want an error about the role", name, err)
		}
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
	cfg := Config{Servers: []string{strings.TrimPrefix(hs.URL, "http://")}, Schema: "s", CacheDir: t.TempDir(),
		PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	open := func() (*sql.DB, *lbd.Connector) {
		t.Helper()
		src, err := New(cfg)
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
