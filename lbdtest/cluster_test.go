package lbdtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestStartRejectsBadCount(t *testing.T) {
	for _, n := range []int{0, -1} {
		if c, err := Start(n); err == nil {
			_ = c.Close()
			t.Fatalf("Start(%d) succeeded", n)
		}
	}
}

func TestSharedDatabase(t *testing.T) {
	c := NewCluster(t, 3)
	db0 := openDB(t, c, c.Proxy(0).Addr(), "")
	db1 := openDB(t, c, c.Proxy(1).Addr(), "")
	db2 := openDB(t, c, c.Proxy(2).Addr(), "")

	tbl := tableName("shared")
	if _, err := db0.Exec("CREATE TABLE " + tbl + " (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(40), score DOUBLE)"); err != nil {
		t.Fatal(err)
	}
	dropTable(t, db0, tbl)

	res, err := db1.Exec("INSERT INTO "+tbl+" (name, score) VALUES (?, ?), (?, ?)", "alpha", 1.5, "beta", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 2 {
		t.Fatalf("RowsAffected = %d, %v; want 2", n, err)
	}
	if _, err := db1.Exec("INSERT INTO " + tbl + " (name, score) VALUES ('gamma', 3)"); err != nil {
		t.Fatal(err)
	}

	// Text protocol and prepared statements both through a third proxy.
	rows, err := db2.Query("SELECT id, name, score FROM " + tbl + " ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id int
		var name string
		var score sql.NullFloat64
		if err := rows.Scan(&id, &name, &score); err != nil {
			t.Fatal(err)
		}
		if name == "beta" && score.Valid {
			t.Errorf("beta score = %v, want NULL", score.Float64)
		}
		got = append(got, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	_ = rows.Close()
	if strings.Join(got, ",") != "alpha,beta,gamma" {
		t.Fatalf("rows = %v", got)
	}
	var score float64
	if err := db2.QueryRow("SELECT score FROM "+tbl+" WHERE name = ?", "gamma").Scan(&score); err != nil {
		t.Fatal(err)
	}
	if score != 3 {
		t.Fatalf("score = %v, want 3", score)
	}

	// An error from the backend itself passes through untouched.
	if _, err := db2.Exec("SELECT * FROM no_such_table_" + tbl); err == nil {
		t.Fatal("query on a missing table succeeded")
	}

	// The backend answers directly too.
	direct := openDB(t, c, c.BackendAddr(), "")
	var n int
	if err := direct.QueryRow("SELECT COUNT(*) FROM " + tbl).Scan(&n); err != nil || n != 3 {
		t.Fatalf("direct count = %d, %v; want 3", n, err)
	}
}

func TestAddProxy(t *testing.T) {
	c := NewCluster(t, 2)
	db0 := openDB(t, c, c.Proxy(0).Addr(), "")
	tbl := tableName("grow")
	if _, err := db0.Exec("CREATE TABLE " + tbl + " (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	dropTable(t, db0, tbl)
	if _, err := db0.Exec("INSERT INTO " + tbl + " VALUES (7)"); err != nil {
		t.Fatal(err)
	}

	p, err := c.AddProxy()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Proxies()); got != 3 {
		t.Fatalf("len(Proxies) = %d, want 3", got)
	}
	if c.Proxy(2) != p || c.Addrs()[2] != p.Addr() {
		t.Fatal("new proxy is not last")
	}
	seen := map[string]bool{}
	for _, a := range c.Addrs() {
		if seen[a] {
			t.Fatalf("duplicate address %s", a)
		}
		seen[a] = true
	}
	if !p.Running() {
		t.Fatal("new proxy not running")
	}
	var id int
	if err := openDB(t, c, p.Addr(), "").QueryRow("SELECT id FROM " + tbl).Scan(&id); err != nil || id != 7 {
		t.Fatalf("id = %d, %v; want 7", id, err)
	}
}

func TestDSN(t *testing.T) {
	c := NewCluster(t, 3)
	a := c.Addrs()
	want := c.User() + ":" + c.Password() + "@lb(" + a[0] + "," + a[1] + "," + a[2] + ")/" + c.Database()
	if got := c.DSN(""); got != want {
		t.Fatalf("DSN(\"\") = %q, want %q", got, want)
	}
	if got := c.DSN("timeout=1s&parseTime=true"); got != want+"?timeout=1s&parseTime=true" {
		t.Fatalf("DSN(params) = %q", got)
	}
	for _, addr := range a {
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			t.Fatalf("address %q not on loopback", addr)
		}
	}
	if os.Getenv(EnvBackendDSN) == "" {
		if c.User() != "root" || c.Password() != "" || c.Database() != DefaultDatabase {
			t.Fatalf("credentials = %q %q %q", c.User(), c.Password(), c.Database())
		}
	}
}

func TestWithDatabase(t *testing.T) {
	if os.Getenv(EnvBackendDSN) != "" {
		t.Skip("the external backend's DSN names its own database")
	}
	c := NewCluster(t, 1, WithDatabase("otherdb"), WithLogger(nil), nil)
	if c.Database() != "otherdb" {
		t.Fatalf("Database() = %q", c.Database())
	}
	var name string
	if err := openDB(t, c, c.Proxy(0).Addr(), "").QueryRow("SELECT DATABASE()").Scan(&name); err != nil || name != "otherdb" {
		t.Fatalf("DATABASE() = %q, %v", name, err)
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	before := goleak.IgnoreCurrent()
	c, err := Start(3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var dbs []*sql.DB
	for _, addr := range c.Addrs() {
		db := openDB(t, c, addr, "")
		if err := db.PingContext(ctx); err != nil {
			t.Fatal(err)
		}
		dbs = append(dbs, db)
	}
	// Leave the cluster in an awkward state: one proxy hung with a
	// statement stalled in it, one stopped.
	stalled := make(chan error, 1)
	hung := c.Proxy(1)
	conn, err := dbs[1].Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hung.Hang()
	go func() {
		_, err := conn.ExecContext(ctx, "SET @lbd_stalled = 1")
		stalled <- err
	}()
	waitFor(t, 5*time.Second, "stalled statement to reach the proxy", func() bool { return hung.Statements() > 0 })
	if err := c.Proxy(2).Stop(); err != nil {
		t.Fatal(err)
	}

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	select {
	case err := <-stalled:
		if err == nil {
			t.Fatal("stalled statement succeeded after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stalled statement still blocked after Close")
	}
	_ = conn.Close()
	if _, err := c.AddProxy(); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddProxy after Close = %v, want ErrClosed", err)
	}
	for _, p := range c.Proxies() {
		if p.Running() {
			t.Fatalf("proxy %s still running", p.Addr())
		}
		if err := p.Start(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Start after Close = %v, want ErrClosed", err)
		}
		if p.OpenConns() != 0 {
			t.Fatalf("proxy %s has %d open connections", p.Addr(), p.OpenConns())
		}
	}
	for _, db := range dbs {
		_ = db.Close()
	}
	goleak.VerifyNone(t, before)
}

func TestTransactions(t *testing.T) {
	c := NewCluster(t, 2)
	db0 := openDB(t, c, c.Proxy(0).Addr(), "")
	db1 := openDB(t, c, c.Proxy(1).Addr(), "")
	tbl := tableName("tx")
	if _, err := db0.Exec("CREATE TABLE " + tbl + " (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	dropTable(t, db0, tbl)

	count := func() int {
		t.Helper()
		var n int
		if err := db1.QueryRow("SELECT COUNT(*) FROM " + tbl).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tx, err := db0.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO "+tbl+" VALUES (?)", 1); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("uncommitted row visible elsewhere: %d", n)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("rolled-back row visible: %d", n)
	}

	tx, err = db0.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO "+tbl+" VALUES (?)", 2); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after commit: %d rows, want 1", n)
	}
}

// Clusters started at once, as parallel tests start them, each serve their own database; under
// -race a shared structure of the in-memory engine that their starts touch without a lock
// fails the run.
func TestClustersStartInParallel(t *testing.T) {
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			c := NewCluster(t, 1)
			db := openDB(t, c, c.Proxy(0).Addr(), "")
			var v int
			if err := db.QueryRow("SELECT 1").Scan(&v); err != nil || v != 1 {
				t.Fatalf("SELECT 1 through cluster %d: %d, %v", i, v, err)
			}
		})
	}
}
