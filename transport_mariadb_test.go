package lbd

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestMariaDBTransports runs lbd's compression and TLS against the real server in
// LBD_TEST_MYSQL_DSN (a go-sql-driver DSN): a result of many rows in many compressed packets, a
// 6 MB value, a 100 kB statement, and a multi-statement text, whose second result the server
// numbers on from its compressed packets' count (it renumbers at each flush), not from the
// first result's packets. TLS runs only when the server has it (have_ssl = YES); lbd does not
// configure the server.
func TestMariaDBTransports(t *testing.T) {
	dsn := os.Getenv("LBD_TEST_MYSQL_DSN")
	if dsn == "" {
		t.Skip("LBD_TEST_MYSQL_DSN is not set")
	}
	my, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("LBD_TEST_MYSQL_DSN: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	var name, haveSSL string
	if err := direct.QueryRowContext(ctx, "SHOW VARIABLES LIKE 'have_ssl'").Scan(&name, &haveSSL); err != nil {
		t.Fatal(err)
	}
	direct.Close()

	for _, tc := range []struct{ name, params string }{
		{"compress", "compress=true"},
		{"tls", "tls=skip-verify"},
		{"tls+compress", "tls=skip-verify&compress=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.params, "tls") && haveSSL != "YES" {
				t.Skipf("the server has no TLS (have_ssl = %s)", haveSSL)
			}
			before := testkit.IgnoreCurrent()
			lbdDSN := my.User + ":" + my.Passwd + "@lb(" + my.Addr + ")/" + my.DBName + "?timeout=5s&multiStatements=true&" + tc.params
			c, err := NewConnector(lbdDSN, append(quiet(), WithLogger(discardLogger()))...)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			var status, value string
			if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Compression'").Scan(&status, &value); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{true: "ON", false: "OFF"}[strings.Contains(tc.params, "compress")]; value != want {
				t.Errorf("session Compression = %s, want %s", value, want)
			}
			if strings.Contains(tc.params, "tls") {
				var cipher string
				if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&status, &cipher); err != nil || cipher == "" {
					t.Errorf("Ssl_cipher = %q, %v; want a cipher", cipher, err)
				}
			}
			rows, err := db.QueryContext(ctx, "SELECT seq, REPEAT('ab', seq % 300) FROM seq_1_to_20000")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var seq int
				var s string
				if err := rows.Scan(&seq, &s); err != nil {
					t.Fatal(err)
				}
				n++
				if seq != n || len(s) != 2*(seq%300) {
					t.Fatalf("row %d: seq %d, %d bytes", n, seq, len(s))
				}
			}
			if err := rows.Err(); err != nil || n != 20000 {
				t.Fatalf("%d rows, %v; want 20000", n, err)
			}
			var big string
			if err := db.QueryRowContext(ctx, "SELECT REPEAT('xyz', 2000000)").Scan(&big); err != nil || len(big) != 6000000 {
				t.Fatalf("a 6 MB value: %d bytes, %v", len(big), err)
			}
			if _, err := db.ExecContext(ctx, "DO ?", strings.Repeat("q", 100000)); err != nil {
				t.Fatalf("a 100 kB statement: %v", err)
			}
			multi, err := db.QueryContext(ctx, "SELECT seq FROM seq_1_to_50; SELECT 'second'")
			if err != nil {
				t.Fatal(err)
			}
			n = 0
			for multi.Next() {
				n++
			}
			var second string
			if !multi.NextResultSet() || !multi.Next() {
				t.Fatalf("after %d rows, no second result: %v", n, multi.Err())
			}
			if err := multi.Scan(&second); err != nil || second != "second" || n != 50 {
				t.Fatalf("%d rows, then %q, %v", n, second, err)
			}
			multi.Close()
			db.Close()
			testkit.VerifyNone(t, before)
		})
	}
}
