package lbdtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

func TestConcurrentLoad(t *testing.T) {
	if os.Getenv("LBD_TEST_LONG") != "1" {
		t.Skip("a long run: set LBD_TEST_LONG=1 to run it (.ci/run does)")
	}
	const (
		workers = 16
		perWork = 200
	)
	c := NewCluster(t, 3)
	dbs := make([]*sql.DB, 3)
	for i, addr := range c.Addrs() {
		dbs[i] = openDB(t, c, addr, "")
		dbs[i].SetMaxOpenConns(8)
	}
	tbl := tableName("load")
	if _, err := dbs[0].Exec("CREATE TABLE " + tbl + " (w INT, i INT, v VARCHAR(32), PRIMARY KEY (w, i))"); err != nil {
		t.Fatal(err)
	}
	dropTable(t, dbs[0], tbl)

	ctx := context.Background()
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db := dbs[w%len(dbs)]
			for i := range perWork {
				var err error
				switch i % 4 {
				case 0: // prepared insert
					_, err = db.ExecContext(ctx, "INSERT INTO "+tbl+" VALUES (?, ?, ?)", w, i, fmt.Sprint("v", i))
				case 1: // prepared point read of the row just written
					var v string
					err = db.QueryRowContext(ctx, "SELECT v FROM "+tbl+" WHERE w = ? AND i = ?", w, i-1).Scan(&v)
					if err == nil && v != fmt.Sprint("v", i-1) {
						err = fmt.Errorf("read %q", v)
					}
				case 2: // text-protocol scan
					var n int
					err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE w = %d", tbl, w)).Scan(&n)
				default: // session statement
					_, err = db.ExecContext(ctx, "SET @lbd_load = 1")
				}
				if err != nil {
					errs <- fmt.Errorf("worker %d op %d: %w", w, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var msgs []string
	for err := range errs {
		msgs = append(msgs, err.Error())
	}
	if len(msgs) > 0 {
		t.Fatalf("%d workers failed:\n%s", len(msgs), strings.Join(msgs, "\n"))
	}

	var n int
	if err := dbs[2].QueryRow("SELECT COUNT(*) FROM " + tbl).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := workers * perWork / 4; n != want {
		t.Fatalf("rows = %d, want %d", n, want)
	}
	var stmts int64
	for _, p := range c.Proxies() {
		if p.Statements() == 0 {
			t.Errorf("proxy %s saw no statements", p.Addr())
		}
		stmts += p.Statements()
	}
	if stmts < workers*perWork {
		t.Fatalf("statements = %d, want at least %d", stmts, workers*perWork)
	}
}

func TestLargePackets(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	// Larger than any single read on either side of the relay.
	big := strings.Repeat("x", 1<<20)
	var n int
	if err := db.QueryRow("SELECT LENGTH('" + big + "')").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(big) {
		t.Fatalf("LENGTH = %d, want %d", n, len(big))
	}
	var back string
	if err := db.QueryRow("SELECT ?", big).Scan(&back); err != nil {
		t.Fatal(err)
	}
	if back != big {
		t.Fatalf("echoed %d bytes, want %d", len(back), len(big))
	}
	q := p.Queries()
	if len(q) == 0 || len(q[0]) != maxRecordedQuery {
		t.Fatalf("large text recorded at %d bytes, want it cut to %d", len(q[0]), maxRecordedQuery)
	}
}

func TestCompressedConnection(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	// Compression is used only where the backend offers it; either way
	// the relay must carry the connection faithfully.
	db := openDB(t, c, p.Addr(), "compress=true")
	for i := range 20 {
		var v int
		if err := db.QueryRow("SELECT ?", i).Scan(&v); err != nil || v != i {
			t.Fatalf("query %d: %d, %v", i, v, err)
		}
	}
	t.Logf("statements counted on a compress=true connection: %d", p.Statements())
}

// BenchmarkRoundTrip compares a trivial query sent straight to the backend
// with the same query relayed by a proxy.
func BenchmarkRoundTrip(b *testing.B) {
	c := NewCluster(b, 1)
	for _, target := range []struct{ name, addr string }{
		{"direct", c.BackendAddr()},
		{"proxy", c.Proxy(0).Addr()},
	} {
		b.Run(target.name, func(b *testing.B) {
			db := openDB(b, c, target.addr, "")
			db.SetMaxIdleConns(4)
			ctx := context.Background()
			for b.Loop() {
				var v int
				if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
