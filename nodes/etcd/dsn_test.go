package etcd_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
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
			_, err := started(lbd.NewConnector(dsn, lbd.WithLogger(discard())))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewConnector(%q) = %v, want an error naming %q", dsn, err, c.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error shows the etcd password: %v", err)
			}
		})
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
		conn, err := started(lbd.NewConnector(dsn, lbd.WithLogger(discard()), lbd.WithCheckHealthInterval(time.Hour)))
		if (err == nil) != c.ok {
			t.Errorf("%s: NewConnector error %v, want success %v", dsn, err, c.ok)
		}
		if err == nil {
			conn.Close()
		}
	}
}
