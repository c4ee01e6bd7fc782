package routing

import (
	"crypto/tls"
	"fmt"
	"github.com/lbd-go/lbd/internal/testkit"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestTLSThroughTheCluster runs lbd's TLS (the SSL request and crypto/tls beneath go-sql-driver)
// against go-mysql-server's own TLS, through the cluster's three proxies: every connection's
// handshake checks the backend's certificate for the proxy's own address, and statements
// write and read the shared database over it.
func TestTLSThroughTheCluster(t *testing.T) {
	if clusterkit.OnMariaDB() {
		t.Skip("the external backend's TLS is its own; lbdtest.WithTLS serves the in-memory one")
	}
	server, roots, err := mysqlfake.SelfSigned("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	var handshakes atomic.Int64
	client := &tls.Config{RootCAs: roots, VerifyConnection: func(cs tls.ConnectionState) error {
		handshakes.Add(1)
		return nil
	}}
	if err := mysql.RegisterTLSConfig("lbd-cluster-tls", client); err != nil {
		t.Fatal(err)
	}
	defer mysql.DeregisterTLSConfig("lbd-cluster-tls")
	cl := lbdtest.NewCluster(t, 3, lbdtest.WithTLS(server))
	db, c := clusterkit.OpenDB(t, cl, "tls=lbd-cluster-tls", clusterkit.Quiet()...)
	conns := testkit.HoldConns(t, db, 6)
	if got := clusterkit.OpenCounts(c, cl); clusterkit.Spread(got) != 0 {
		t.Errorf("Stats open = %v, want 2/2/2", got)
	}
	if n := handshakes.Load(); n < 6 {
		t.Errorf("%d TLS handshakes for 6 connections", n)
	}
	for _, cn := range conns {
		cn.Close()
	}
	if _, err := db.Exec("CREATE TABLE tls_rows (id INT PRIMARY KEY, v VARCHAR(100))"); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := db.Exec("INSERT INTO tls_rows VALUES (?, ?)", i, fmt.Sprint("row ", i)); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	var last string
	if err := db.QueryRow("SELECT COUNT(*), MAX(v) FROM tls_rows").Scan(&n, &last); err != nil || n != 50 || last != "row 9" {
		t.Fatalf("COUNT, MAX = %d, %q, %v; want 50, \"row 9\"", n, last, err)
	}
}
