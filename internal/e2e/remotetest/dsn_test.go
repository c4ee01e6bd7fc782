package remotetest

import (
	"database/sql"
	"fmt"
	"github.com/lbd-go/lbd/internal/remotefake"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// The DSN network end to end: the parameters reach the source and stay away from the
// proxies, the list follows the config-server, and Close leaves no goroutine behind.
func TestDSN(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	a := cl.Addrs()
	cs := remotefake.New(t)
	cs.SetKey("dsn-key")
	cs.SetList("im_user", a...)
	cs.SetAZ("im_user", "az1", a[0], a[1])
	leaks := goleak.IgnoreCurrent()

	dsn := fmt.Sprintf("%s:%s@lbremote(%s,%s)/%s?configServerSchema=im_user&configServerApiKey=dsn-key"+
		"&configServerCacheDir=%s&configServerTimeout=500&configServerPollIntervalSeconds=1&az=az1&timeout=2s",
		cl.User(), cl.Password(), remotefake.DeadAddr(t), cs.Addr(), cl.Database(), url.QueryEscape(t.TempDir()))
	cfg, err := lbd.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.MySQL.Params) != 0 || cfg.SourceParams["configServerApiKey"] != "dsn-key" {
		t.Fatalf("go-sql-driver params %v, source params %d", cfg.MySQL.Params, len(cfg.SourceParams))
	}
	logs := &logRecorder{}
	c, err := testkit.Started(lbd.NewConnector(dsn, fastOptions(logs)...))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	if got := c.Stats().Nodes; len(got) != 2 || got[0].Addr != a[0] || got[1].Addr != a[1] {
		t.Fatalf("nodes %+v, want the az1 set", got)
	}
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	for _, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			if strings.Contains(q, "configServer") || strings.Contains(q, "az") {
				t.Fatalf("a source parameter reached a proxy: %s", q)
			}
		}
	}
	cs.SetAZ("im_user", "az1", a[0], a[1], a[2])
	waitFor(t, 10*time.Second, "the third proxy", func() bool { return isUp(c, a[2]) })
	if r := cs.Requests()[0]; r.Auth != "Bearer dsn-key" || r.Query.Get("az") != "az1" {
		t.Fatalf("request %v, auth %q", r.Query, r.Auth)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	goleak.VerifyNone(t, leaks)

	_, err = testkit.Started(lbd.NewConnector(strings.Replace(dsn, "configServerSchema=im_user&", "", 1), fastOptions(logs)...))
	if err == nil || !strings.Contains(err.Error(), "configServerSchema") {
		t.Fatalf("no schema: %v", err)
	}
}
