package routing

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
)

// serverStateQuestions are statements whose answer lives on one server or one session: none
// may reach a replica.
var serverStateQuestions = []string{
	"SELECT GET_LOCK('lbd_k', 0)",
	"SELECT IS_FREE_LOCK('lbd_k')",
	"SELECT IS_USED_LOCK('lbd_k')",
	"SELECT RELEASE_LOCK('lbd_k')",
	"SELECT RELEASE_ALL_LOCKS()",
	"SELECT CONNECTION_ID()",
	"SELECT LAST_INSERT_ID()",
	"SELECT FOUND_ROWS()",
	"SELECT ROW_COUNT()",
	"SELECT VERSION()",
	"SELECT my_udf(1)",
	"SELECT test.f(1)",
	"SELECT COUNT(*) FROM information_schema.PROCESSLIST",
}

// Every write and every server-state question reaches the primary alone, counted at the
// proxies; the server's own errors for what the in-memory engine lacks do not matter here.
func TestSplitSendsWritesAndServerStateOnlyToThePrimary(t *testing.T) {
	cl, _, db, _, _ := splitCluster(t, "readAfterWriteMillis=0")
	ctx := context.Background()
	for range 20 {
		for _, q := range serverStateQuestions {
			// Each on a logical connection of its own, dropped afterwards: GET_LOCK pins its
			// connection to the primary, which would carry the later questions there.
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rows, err := conn.QueryContext(ctx, q); err == nil {
				rows.Close()
			}
			conn.Raw(func(any) error { return driver.ErrBadConn })
			conn.Close()
		}
	}
	for _, q := range serverStateQuestions {
		n := countQueries(cl, q)
		if n[0] != 20 {
			t.Errorf("%s reached the primary %d times of 20", q, n[0])
		}
		for i, k := range n[1:] {
			if k != 0 {
				t.Errorf("%s reached replica %s %d times", q, cl.Proxies()[i+1].Addr(), k)
			}
		}
	}
}

// pinOnAReplica opens *sql.Conns until one runs a read-only transaction on a replica, sets a
// user variable there and commits; it returns that connection and the replica's proxy.
func pinOnAReplica(t *testing.T, cl *lbdtest.Cluster, db *sql.DB) (*sql.Conn, *lbdtest.Proxy) {
	t.Helper()
	ctx := context.Background()
	for i := range 20 {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		set := fmt.Sprintf("SET @lbd_pin_%d = 1", i)
		if _, err := tx.ExecContext(ctx, set); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		for j, n := range countQueries(cl, set) {
			if n == 1 && cl.Proxies()[j].Role() == lbdtest.Replica {
				t.Cleanup(func() { conn.Close() })
				return conn, cl.Proxies()[j]
			}
		}
		conn.Close()
	}
	t.Fatal("no read-only transaction of 20 ran on a replica")
	return nil, nil
}

// A logical connection that carries session state on a replica connection never runs a write
// or a server-state question there: each fails with lbd.ErrPinnedToReplica, before it is sent.
func TestSplitNeverWritesOnAPinnedReplica(t *testing.T) {
	t.Parallel()
	cl, _, db, exec, _ := splitCluster(t, "readAfterWriteMillis=0")
	table := fmt.Sprintf("lbd_pin_%d", os.Getpid())
	ctx := context.Background()
	if err := exec(ctx, "CREATE TABLE "+table+" (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec(ctx, "DROP TABLE IF EXISTS "+table) })
	conn, replica := pinOnAReplica(t, cl, db)
	before := len(replica.Queries())
	for _, q := range append([]string{"INSERT INTO " + table + " VALUES (1)", "UPDATE " + table + " SET id = 2"}, serverStateQuestions...) {
		_, err := conn.ExecContext(ctx, q)
		if !errors.Is(err, lbd.ErrPinnedToReplica) {
			t.Errorf("%s on the pinned connection: %v, want lbd.ErrPinnedToReplica", q, err)
		}
	}
	if _, err := conn.BeginTx(ctx, nil); !errors.Is(err, lbd.ErrPinnedToReplica) {
		t.Errorf("a read-write transaction on the pinned connection: %v, want lbd.ErrPinnedToReplica", err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("a plain read on the pinned connection: %v", err)
	}
	for _, q := range replica.Queries()[before:] {
		if !strings.HasPrefix(q, "SELECT COUNT(*) FROM "+table) && !strings.Contains(q, "read_only") && !strings.Contains(q, "ping") {
			t.Errorf("the replica received %q", q)
		}
	}
	if replica.Refused() != 0 {
		t.Errorf("the replica refused %d writes: they reached it", replica.Refused())
	}
}
