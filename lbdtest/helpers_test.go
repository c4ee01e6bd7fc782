package lbdtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// openDB opens a database/sql handle that talks to addr directly (plain
// tcp network) with the cluster's credentials, closed at test end.
func openDB(t testing.TB, c *Cluster, addr, params string) *sql.DB {
	t.Helper()
	dsn := fmt.Sprintf("%s:%s@tcp(%s)/%s", c.User(), c.Password(), addr, c.Database())
	if params != "" {
		dsn += "?" + params
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// tableName returns a table name that no other test run uses.
func tableName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// dropTable drops name through db at test end.
func dropTable(t testing.TB, db *sql.DB, name string) {
	t.Cleanup(func() {
		if _, err := db.Exec("DROP TABLE IF EXISTS " + name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
}

// waitFor polls cond until it holds or d passes, then fails the test.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
