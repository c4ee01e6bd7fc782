package lbd

import (
	"bytes"
	"compress/flate"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/testkit"
)

// TestTransportRoundTrips runs real round trips over TLS (the certificate checked against the
// node's own address), the compressed protocol, and both: a multi-row answer, a prepared
// statement, and a result larger than one compressed packet, so that lbd's framing carries
// every packet go-sql-driver reads and writes.
func TestTransportRoundTrips(t *testing.T) {
	big := strings.Repeat("x", 70000) // several plain packets' worth in one answer
	answer := func(q string) *mysqlfake.Result {
		switch {
		case strings.Contains(q, "many"):
			res := &mysqlfake.Result{Columns: []string{"n"}}
			for i := range 500 {
				res.Rows = append(res.Rows, []string{fmt.Sprint(i)})
			}
			return res
		case strings.Contains(q, "big"):
			return &mysqlfake.Result{Columns: []string{"b"}, Rows: [][]string{{big}}}
		}
		return mysqlfake.DefaultAnswer(q)
	}
	for _, tc := range []struct{ name, tr string }{{"tls", "tls"}, {"compress", "compress"}, {"tls+compress", "tls+compress"}} {
		t.Run(tc.name, func(t *testing.T) {
			before := testkit.IgnoreCurrent()
			cfg := mysqlfake.Config{Answer: answer, DeprecateEOF: true}
			var params []string
			for _, tr := range strings.Split(tc.tr, "+") {
				params = append(params, strings.TrimPrefix(transportParams(t, tr, &cfg), "&"))
			}
			srv := mysqlfake.Start(t, cfg)
			c, err := NewConnector(fakeDSN([]*mysqlfake.Server{srv}, strings.Join(params, "&")), append(quiet(), WithLogger(discardLogger()))...)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range 3 { // the pooled connection is reused: commands after the first
				var v string
				if err := db.QueryRowContext(ctx, "SELECT 7").Scan(&v); err != nil || v != "7" {
					t.Fatalf("SELECT 7: %q, %v", v, err)
				}
			}
			rows, err := db.QueryContext(ctx, "SELECT many")
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var v int
				if err := rows.Scan(&v); err != nil || v != n {
					t.Fatalf("row %d: %d, %v", n, v, err)
				}
				n++
			}
			if err := rows.Err(); err != nil || n != 500 {
				t.Fatalf("%d rows, %v; want 500", n, err)
			}
			rows.Close()
			var b string
			if err := db.QueryRowContext(ctx, "SELECT big").Scan(&b); err != nil || b != big {
				t.Fatalf("SELECT big: %d bytes, %v", len(b), err)
			}
			st, err := db.PrepareContext(ctx, "SELECT ?")
			if err != nil {
				t.Fatal(err)
			}
			var p string
			if err := st.QueryRowContext(ctx, "42").Scan(&p); err != nil || p != "42" {
				t.Fatalf("prepared SELECT ?: %q, %v", p, err)
			}
			st.Close()
			if _, err := db.ExecContext(ctx, "UPDATE t SET x = 1"); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tc.tr, "tls") && srv.TLSConns() == 0 {
				t.Error("no connection switched to TLS")
			}
			if strings.Contains(tc.tr, "compress") && srv.CompressedConns() == 0 {
				t.Error("no connection switched to the compressed protocol")
			}
			db.Close()
			waitFor(t, 5*time.Second, "the server to see every socket closed", func() bool { return srv.Open() == 0 })
			srv.Close()
			testkit.VerifyNone(t, before)
		})
	}
}

// TestTLSRefusals: a certificate that names another host fails the dial on the certificate;
// tls=true against a server without TLS fails with go-sql-driver's ErrNoTLS, and
// tls=preferred falls back to a plain connection.
func TestTLSRefusals(t *testing.T) {
	before := testkit.IgnoreCurrent()
	defer testkit.VerifyNone(t, before)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	query := func(srv *mysqlfake.Server, params string) error {
		c, err := NewConnector(fakeDSN([]*mysqlfake.Server{srv}, params), append(quiet(), WithLogger(discardLogger()))...)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		defer db.Close()
		var v string
		return db.QueryRowContext(ctx, "SELECT 1").Scan(&v)
	}

	other, _, err := mysqlfake.SelfSigned("db.example")
	if err != nil {
		t.Fatal(err)
	}
	hostileTLS(t) // registers hostileTLSName, which trusts only the 127.0.0.1 certificate
	wrong := mysqlfake.Start(t, mysqlfake.Config{TLS: other})
	if err := query(wrong, "tls="+hostileTLSName); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a certificate for another host: %v, want a certificate error", err)
	}
	plain := mysqlfake.Start(t, mysqlfake.Config{})
	if err := query(plain, "tls=skip-verify"); !errors.Is(err, mysql.ErrNoTLS) {
		t.Errorf("tls against a server without TLS: %v, want mysql.ErrNoTLS", err)
	}
	if err := query(plain, "tls=preferred"); err != nil {
		t.Errorf("tls=preferred against a server without TLS: %v, want a plain connection", err)
	}
	wrong.Close()
	plain.Close()
}

// zlibBomb is one compressed packet whose header declares 100 plain bytes and whose zlib
// stream inflates to 256 MiB of zeros. The stream is built from one deflated MiB of zeros
// (byte-aligned by a flush, its back-references reaching only zeros) repeated, then an empty
// final block and the checksum, which for n zeros is (n mod 65521)<<16 | 1: deflating 256 MiB
// under the race detector would take half a minute.
var zlibBomb = sync.OnceValue(func() []byte {
	const mib = 256
	var block bytes.Buffer
	w, _ := flate.NewWriter(&block, flate.BestCompression)
	w.Write(make([]byte, 1<<20))
	w.Flush()
	z := []byte{0x78, 0xda} // zlib header: deflate, 32 KiB window, best compression
	for range mib {
		z = append(z, block.Bytes()...)
	}
	z = append(z, 0x01, 0x00, 0x00, 0xff, 0xff) // final empty stored block
	z = binary.BigEndian.AppendUint32(z, (mib<<20%65521)<<16|1)
	n := len(z)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 1, 100, 0, 0}, z...)
})

// TestCompressedBombIsBounded answers the application's query, then the probe, with a
// compressed packet declaring 100 bytes that inflates to 256 MiB. lbd stops inflating at the
// declared length: each costs less than 64 MiB of allocation (counted as the growth of the
// heap's total allocation, which bounds the peak), and the call fails with ErrProtocol.
func TestCompressedBombIsBounded(t *testing.T) {
	before := testkit.IgnoreCurrent()
	defer testkit.VerifyNone(t, before)
	bomb := zlibBomb()
	const budget = 64 << 20
	for _, via := range []string{"query", "probe"} {
		t.Run(via, func(t *testing.T) {
			cfg := mysqlfake.Config{Compress: true, StallTimeout: 10 * time.Second}
			srv := mysqlfake.Start(t, cfg)
			match := mysqlfake.QueryContains("/* hostile */")
			if via == "probe" {
				match = mysqlfake.QueryContains(probeQuery)
			}
			var hits atomic.Int64
			srv.AddFault(mysqlfake.Fault{Name: "header/zlib_bomb", Phase: mysqlfake.PhaseResultHeader, Bytes: mysqlfake.Raw(bomb), Beneath: true, After: mysqlfake.Stall,
				Match: func(c mysqlfake.Command) bool { return match(c) && hits.Add(1) > 0 }})
			opts := append(quiet(), WithLogger(discardLogger()), WithFatalErrorThreshold(1))
			if via == "probe" {
				opts = fast(200*time.Millisecond, 2*time.Second, time.Hour, &logRecorder{})
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0) // before the Connector, whose first probe runs at once
			c, err := NewConnector(fakeDSN([]*mysqlfake.Server{srv}, "compress=true"), opts...)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			defer db.Close()
			if via == "query" {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				var v string
				err := db.QueryRowContext(ctx, "/* hostile */ SELECT 1").Scan(&v)
				if !errors.Is(err, ErrProtocol) {
					t.Errorf("query answered by a zlib bomb: %v, want ErrProtocol", err)
				}
			} else {
				waitFor(t, 10*time.Second, "the probe to take the node out", func() bool {
					ns, _ := c.Stats().Node(srv.Addr())
					return ns.State != StateUp
				})
			}
			runtime.ReadMemStats(&m1)
			if hits.Load() == 0 {
				t.Fatal("the bomb was never sent")
			}
			if grew := m1.TotalAlloc - m0.TotalAlloc; grew > budget {
				t.Errorf("the bomb cost %d MiB of allocation, budget %d MiB", grew>>20, budget>>20)
			} else {
				t.Logf("the bomb cost %d KiB of allocation", grew>>10)
			}
			db.Close()
			srv.Close()
		})
	}
}

// TestTLSLoginFailureLeavesNoGoroutine answers a TLS login with a truncated OK and then with a
// truncated ERR, many times: each attempt fails with ErrProtocol and nothing of it stays behind.
func TestTLSLoginFailureLeavesNoGoroutine(t *testing.T) {
	before := testkit.IgnoreCurrent()
	defer testkit.VerifyNone(t, before)
	for _, name := range []string{"auth/ok_1byte", "auth/err_2byte"} {
		f, ok := mysqlfake.Lookup(name)
		if !ok {
			t.Fatalf("no fault %s in the catalogue", name)
		}
		cfg := mysqlfake.Config{}
		transportParams(t, "tls", &cfg)
		srv := mysqlfake.Start(t, cfg)
		srv.AddFault(f)
		c, err := NewConnector(fakeDSN([]*mysqlfake.Server{srv}, "tls=skip-verify"), append(quiet(), WithLogger(discardLogger()))...)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		for i := range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := db.PingContext(ctx)
			cancel()
			if !errors.Is(err, ErrProtocol) {
				t.Errorf("%s, attempt %d: %v, want ErrProtocol", name, i, err)
			}
		}
		db.Close()
		waitFor(t, 5*time.Second, "the server to see every socket closed", func() bool { return srv.Open() == 0 })
		srv.Close()
	}
}

// TestTLSLoginPlugins logs in over lbd's TLS with the plugins whose password goes in clear over
// a secure connection: caching_sha2_password's full authentication and sha256_password.
// go-sql-driver, not knowing the connection is encrypted, would ask the server for its RSA key
// instead; lbd sends the password as go-sql-driver does over its own TLS. A wrong password is
// refused with the server's 1045.
func TestTLSLoginPlugins(t *testing.T) {
	before := testkit.IgnoreCurrent()
	defer testkit.VerifyNone(t, before)
	for _, plugin := range []string{"caching_sha2_password", "sha256_password"} {
		t.Run(plugin, func(t *testing.T) {
			cfg := mysqlfake.Config{User: "app", Password: "s3cret", Plugin: plugin}
			params := strings.TrimPrefix(transportParams(t, "tls", &cfg), "&")
			srv := mysqlfake.Start(t, cfg)
			for _, tc := range []struct {
				password string
				want     uint16 // the server's error number; 0: logged in
				creds    string // a credentials provider's password for every dial; "" for none
			}{{"s3cret", 0, ""}, {"wrong", 1045, ""}, {"wrong", 0, "s3cret"}} {
				dsn := "app:" + tc.password + "@lb(" + srv.Addr() + ")/db?timeout=5s&" + params
				opts := append(quiet(), WithLogger(discardLogger()))
				if tc.creds != "" {
					// The provider's password, not the DSN's, is the one the TLS login sends.
					opts = append(opts, WithCredentials(func(context.Context, string) (string, string, error) { return "app", tc.creds, nil }))
				}
				c, err := NewConnector(dsn, opts...)
				if err != nil {
					t.Fatal(err)
				}
				db := sql.OpenDB(c)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				var v string
				err = db.QueryRowContext(ctx, "SELECT 5").Scan(&v)
				cancel()
				db.Close()
				var me *mysql.MySQLError
				switch {
				case tc.want == 0 && (err != nil || v != "5"):
					t.Errorf("password %q: %q, %v; want a login and 5", tc.password, v, err)
				case tc.want != 0 && (!errors.As(err, &me) || me.Number != tc.want):
					t.Errorf("password %q: %v; want the server's error %d", tc.password, err, tc.want)
				}
			}
			if srv.TLSConns() == 0 {
				t.Error("no connection switched to TLS")
			}
			srv.Close()
		})
	}
}

// TestCompressedFramingFaults answers the application's query with compressed packets that
// break the framing itself: each call fails (with ErrProtocol where the packet's bytes are all
// there and wrong) within its deadline, and nothing stays behind.
func TestCompressedFramingFaults(t *testing.T) {
	before := testkit.IgnoreCurrent()
	defer testkit.VerifyNone(t, before)
	frame := func(ulen int, z []byte) []byte {
		n := len(z)
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 1, byte(ulen), byte(ulen >> 8), byte(ulen >> 16)}, z...)
	}
	deflated := func(s string) []byte {
		var b bytes.Buffer
		w, _ := flate.NewWriter(&b, flate.BestSpeed)
		w.Write([]byte(s))
		w.Close()
		return append(append([]byte{0x78, 0x01}, b.Bytes()...), 0, 0, 0, 0) // checksum left wrong
	}
	header := []byte{0x01, 0, 0, 1, 0x01} // a result header: one column
	for _, tc := range []struct {
		name     string
		bytes    []byte
		after    mysqlfake.Action
		protocol bool // the error must wrap ErrProtocol
	}{
		{"not_zlib", frame(12, []byte("definitely not zlib")), mysqlfake.Stall, true},
		{"bad_checksum", frame(5, deflated(string(header))), mysqlfake.Stall, true},
		{"inflates_short", frame(40, deflated(string(header))), mysqlfake.Stall, true},
		{"empty", frame(0, nil), mysqlfake.Stall, true},
		{"header_cut", []byte{5, 0, 0}, mysqlfake.Close, false},
		{"stored_cut", frame(0, header)[:9], mysqlfake.Stall, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mysqlfake.Start(t, mysqlfake.Config{Compress: true, StallTimeout: 10 * time.Second})
			srv.AddFault(mysqlfake.Fault{Name: "frame/" + tc.name, Phase: mysqlfake.PhaseResultHeader, Bytes: mysqlfake.Raw(tc.bytes), Beneath: true, After: tc.after,
				Match: mysqlfake.QueryContains("/* hostile */")})
			c, err := NewConnector(fakeDSN([]*mysqlfake.Server{srv}, "compress=true"), append(quiet(), WithLogger(discardLogger()))...)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			start := time.Now()
			var v string
			err = db.QueryRowContext(ctx, "/* hostile */ SELECT 1").Scan(&v)
			cancel()
			switch {
			case err == nil:
				t.Errorf("the query succeeded: %q", v)
			case tc.protocol && !errors.Is(err, ErrProtocol):
				t.Errorf("%v; want an error wrapping ErrProtocol", err)
			case time.Since(start) > time.Second+hostileSlack:
				t.Errorf("the call took %v", time.Since(start))
			default:
				t.Logf("%v", err)
			}
			db.Close()
			waitFor(t, 5*time.Second, "the server to see every socket closed", func() bool { return srv.Open() == 0 })
			srv.Close()
		})
	}
}
