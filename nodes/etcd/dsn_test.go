package etcd_test

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

func TestDSNErrors(t *testing.T) {
	cases := []struct {
		name, dsn string
		want      string // in the error
	}{
		{"no key", "u:p@lbetcd(127.0.0.1:2379)/db", "etcdKey"},
		{"empty key", "u:p@lbetcd(127.0.0.1:2379)/db?etcdKey=", "etcdKey"},
		{"prefix key", "u:p@lbetcd(127.0.0.1:2379)/db?etcdKey=%2Flbd%2F", "etcdKey"},
		{"endpoint without port", "u:p@lbetcd(etcd1)/db?etcdKey=k", "etcd1"},
		{"mixed schemes", "u:p@lbetcd(http://e1:2379,https://e2:2379)/db?etcdKey=k", "do not mix"},
		{"TLS over http", "u:p@lbetcd(http://e1:2379)/db?etcdKey=k&etcdTLS=true", "http://"},
		{"bad TLS", "u:p@lbetcd(e1:2379)/db?etcdKey=k&etcdTLS=yes", "etcdTLS"},
		{"zero timeout", "u:p@lbetcd(e1:2379)/db?etcdKey=k&etcdDialTimeoutMillis=0", "etcdDialTimeoutMillis"},
		{"bad interval", "u:p@lbetcd(e1:2379)/db?etcdKey=k&etcdRefreshIntervalSeconds=1m", "etcdRefreshIntervalSeconds"},
		{"password without user", "u:p@lbetcd(e1:2379)/db?etcdKey=k&etcdPassword=" + secret, "etcdUser"},
		{"user without password", "u:p@lbetcd(e1:2379)/db?etcdKey=k&etcdUser=root", "etcdPassword"},
		{"misspelt", "u:p@lbetcd(e1:2379)/db?etcdkey=k", "etcdKey"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Every DSN carries the secret, so that no error may show it.
			dsn := c.dsn
			if !strings.Contains(dsn, secret) {
				dsn += "&etcdUser=root&etcdPassword=" + secret
				if !strings.Contains(c.dsn, "?") {
					dsn = strings.Replace(dsn, "&", "?", 1)
				}
			}
			if c.name == "user without password" {
				dsn = c.dsn
			}
			_, err := testkit.Started(lbd.NewConnector(dsn, lbd.WithLogger(discard())))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewConnector(%q) = %v, want an error naming %q", dsn, err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the etcd password: %v", err)
			}
		})
	}
}

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

// etcdTLS=skip-verify speaks TLS to an etcd with a self-signed certificate, which etcdTLS=true
// refuses; neither TLS nor plain text gets through to the other kind of server.
func TestDSNTLS(t *testing.T) {
	tlsSrv := startEtcdScheme(t, "https")
	plain := startEtcd(t)
	for _, srv := range []*etcdServer{tlsSrv, plain} {
		srv.put(testKey, doc("im_user", "127.0.0.1:1"))
	}
	cases := []struct {
		srv    *etcdServer
		scheme string
		params string
		ok     bool
	}{
		{tlsSrv, "", "&etcdTLS=skip-verify", true},
		{tlsSrv, "https://", "&etcdTLS=skip-verify", true},
		{tlsSrv, "", "&etcdTLS=true", false},
		{tlsSrv, "https://", "", false}, // system roots
		{tlsSrv, "", "", false},
		{plain, "", "&etcdTLS=skip-verify", false},
		{plain, "http://", "&etcdTLS=false", true},
	}
	for _, c := range cases {
		dsn := "u:p@lbetcd(" + c.scheme + c.srv.Endpoint() + ")/db?etcdKey=" + escapedKey + "&etcdDialTimeoutMillis=500" + c.params
		conn, err := testkit.Started(lbd.NewConnector(dsn, append(fastOptions(discard()), lbd.WithCheckHealthInterval(time.Hour))...))
		if (err == nil) != c.ok {
			t.Errorf("%s: NewConnector error %v, want success %v", dsn, err, c.ok)
		}
		if err == nil {
			conn.Close()
		}
	}
}
