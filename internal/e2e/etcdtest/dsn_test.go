package etcdtest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

const secret = "s3cr3t-etcd-pw"

var escapedKey = url.QueryEscape(testKey)

// With authentication on, the right password works and a wrong one is refused; neither shows
// up in errors or log lines, even once etcd becomes unreachable.
func TestDSNAuthentication(t *testing.T) {
	srv := startEtcd(t)
	cl := lbdtest.NewCluster(t, 1)
	srv.put(testKey, doc("im_user", cl.Addrs()...))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := srv.cli.UserAdd(ctx, "root", secret); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}

	base := cl.User() + ":" + cl.Password() + "@lbetcd(" + srv.Endpoint() + ")/" + cl.Database() +
		"?etcdKey=" + escapedKey + "&etcdDialTimeoutMillis=1000&etcdUser=root&etcdPassword="
	l := &logs{}
	_, err := testkit.Started(lbd.NewConnector(base+"wrong-"+secret, lbd.WithLogger(l.Logger())))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("a wrong password: NewConnector = %v, want an error without the password", err)
	}
	t.Logf("wrong password: %v", err)

	c, err := testkit.Started(lbd.NewConnector(base+url.QueryEscape(secret), append(fastOptions(l.Logger()), lbd.WithCheckHealthInterval(time.Hour))...))
	if err != nil {
		t.Fatalf("the right password: %v", err)
	}
	if n := len(c.Stats().Nodes); n != 1 {
		t.Fatalf("%d nodes, want 1", n)
	}
	if cfg := c.Config(); cfg.MySQL.Params["etcdPassword"] != "" {
		t.Fatal("the etcd password reached go-sql-driver's session parameters")
	}
	srv.stop() // the source's next read (after 60 s) would log; Close must not wait for it
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(l.All(), secret) {
		t.Fatalf("a log line shows the password:\n%s", l.All())
	}
}
