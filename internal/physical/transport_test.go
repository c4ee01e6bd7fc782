package physical

import (
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestNewTransportTakesTLSAndCompression: TLS (with fallback) and compression move from the
// go-sql-driver configuration to the Transport, and go-sql-driver is left to negotiate neither.
func TestNewTransportTakesTLSAndCompression(t *testing.T) {
	my, err := mysql.ParseDSN("u:p@tcp(db.example:3306)/d?tls=preferred&compress=true&multiStatements=true")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransport(my)
	if err != nil {
		t.Fatal(err)
	}
	if tr.TLS == nil || !tr.TLS.InsecureSkipVerify || !tr.AllowPlain || !tr.Compress {
		t.Errorf("Transport = TLS %v, AllowPlain %v, Compress %v; want TLS (unchecked, as tls=preferred), AllowPlain and Compress", tr.TLS != nil, tr.AllowPlain, tr.Compress)
	}
	if tr.caps&clientMultiStmts == 0 || tr.caps&clientConnectWithDB == 0 || tr.password != "p" {
		t.Errorf("the SSL request's flags %#x lack go-sql-driver's multi-statements or database flag", tr.caps)
	}
	if dsn := my.FormatDSN(); my.TLS != nil || my.AllowFallbackToPlaintext || strings.Contains(dsn, "tls=") || strings.Contains(dsn, "compress") {
		t.Errorf("go-sql-driver's config still negotiates TLS or compression: %s", dsn)
	}

	plain, _ := mysql.ParseDSN("u:p@tcp(db.example:3306)/d")
	if tr, err := NewTransport(plain); err != nil || tr.TLS != nil || tr.Compress || tr.AllowPlain {
		t.Errorf("a plain config: TLS %v, Compress %v, AllowPlain %v, %v; want no TLS and no compression", tr.TLS != nil, tr.Compress, tr.AllowPlain, err)
	}
}
