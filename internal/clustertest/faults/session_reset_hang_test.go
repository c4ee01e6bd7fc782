package faults

import (
	"context"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestSessionResetOnAHungProxyIsBounded: in statement mode a session pinned by a user variable
// is reset when database/sql hands its logical connection out again. When the pinned proxy
// hangs meanwhile, the reset waits at most a second, the physical connection is closed, and the
// next statement, under a caller's deadline of 10 s, runs on another proxy well within it.
func TestSessionResetOnAHungProxyIsBounded(t *testing.T) {
	t.Parallel()
	cl := lbdtest.NewCluster(t, 3)
	db, c := clusterkit.OpenDB(t, cl, "balance=statement", clusterkit.Quiet()...)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if _, err := db.Exec("SET @u = 1"); err != nil {
		t.Fatal(err)
	}
	var pinned *lbdtest.Proxy
	for i, p := range cl.Proxies() {
		if ns, _ := c.Stats().Node(p.Addr()); ns.Open > 0 {
			pinned = cl.Proxy(i)
		}
	}
	if pinned == nil {
		t.Fatal("no proxy holds the pinned session")
	}
	pinned.Hang()
	t.Cleanup(pinned.Resume)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	var one int
	err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	took := time.Since(began)
	if err != nil {
		t.Fatalf("SELECT 1 after the pinned proxy hung: %v (after %v)", err, took)
	}
	if took > 3*time.Second {
		t.Errorf("SELECT 1 took %v: the reset of the session on the hung proxy held the checkout", took)
	}
	t.Logf("SELECT 1 answered %v after the pinned proxy hung", took)
}
