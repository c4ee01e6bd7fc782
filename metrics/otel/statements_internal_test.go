package lbdotel

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/lbd-go/lbd"
	_ "github.com/lbd-go/lbd/nodes/dns" // registers lbdns
)

// TestServerAddress: server.address and server.port follow the conventions' rules for a
// client configured with several servers, from the DSN's proxies or a node source's addresses.
func TestServerAddress(t *testing.T) {
	for _, tc := range []struct {
		dsn, override string
		addr          string
		port          int
	}{
		{"u:p@lb(a.example:3306,b.example:3306)/db", "", "a.example,b.example", 0},
		{"u:p@lb(b.example:2883,a.example:2883)/db", "", "b.example,a.example", 2883}, // order kept: singleWriter reads it
		{"u:p@lb(a.example:2883,b.example:2884)/db", "", "a.example:2883,b.example:2884", 0},
		{"u:p@lb([::1]:2883,[::2]:2883)/db", "", "[::1],[::2]", 2883},
		{"u:p@lb(a.example:2883)/db", "", "a.example", 2883},
		{"u:p@lb(a.example:2883)/db", "proxies.example", "proxies.example", 0},
		{"u:p@lbdns(proxies.example:2883)/db", "", "proxies.example:2883", 0},
		{"u:p@lb()/db", "", "", 0}, // nodes from the application's own source: no address to name
	} {
		cfg, err := lbd.ParseDSN(tc.dsn)
		if err != nil {
			t.Fatalf("%s: %v", tc.dsn, err)
		}
		if addr, port := serverAddress(cfg, tc.override); addr != tc.addr || port != tc.port {
			t.Errorf("%s (override %q): server.address %q, server.port %d; want %q, %d", tc.dsn, tc.override, addr, port, tc.addr, tc.port)
		}
	}
}

func TestOperationName(t *testing.T) {
	for _, tc := range []struct {
		s    lbd.StatementInfo
		want string
	}{
		{lbd.StatementInfo{Op: lbd.OpQuery, Verb: "SELECT"}, "SELECT"},
		{lbd.StatementInfo{Op: lbd.OpExec, Verb: "UPDATE"}, "UPDATE"},
		{lbd.StatementInfo{Op: lbd.OpExec}, ""},
		{lbd.StatementInfo{Op: lbd.OpPrepare, Verb: "INSERT"}, "PREPARE"},
		{lbd.StatementInfo{Op: lbd.OpBegin}, "BEGIN"},
		{lbd.StatementInfo{Op: lbd.OpCommit}, "COMMIT"},
		{lbd.StatementInfo{Op: lbd.OpRollback}, "ROLLBACK"},
	} {
		if got := operationName(tc.s); got != tc.want {
			t.Errorf("operationName(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestErrorAttributes: a server's error is named by its number, in error.type and
// db.response.status_code, through any wrapping; other errors by their Go type.
func TestErrorAttributes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want map[attribute.Key]string
	}{
		{&mysql.MySQLError{Number: 1146, Message: "no such table"}, map[attribute.Key]string{"error.type": "1146", "db.response.status_code": "1146"}},
		{fmt.Errorf("lbd: %w", &mysql.MySQLError{Number: 1290}), map[attribute.Key]string{"error.type": "1290", "db.response.status_code": "1290"}},
		{context.DeadlineExceeded, map[attribute.Key]string{"error.type": "context.deadlineExceededError"}},
		{fmt.Errorf("dial: %w", lbd.ErrClosed), map[attribute.Key]string{"error.type": "*errors.errorString"}},
	} {
		got := map[attribute.Key]string{}
		for _, kv := range appendError(nil, tc.err) {
			got[kv.Key] = kv.Value.AsString()
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v: %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestWithStatementTelemetryNeedsProviders: a missing provider is an error naming the fix; the
// no-op providers are accepted.
func TestWithStatementTelemetryNeedsProviders(t *testing.T) {
	const dsn = "u:p@lb(127.0.0.1:1)/db?checkHealthIntervalSeconds=3600"
	for _, opts := range []StatementOptions{{}, {TracerProvider: tracenoop.NewTracerProvider()}, {MeterProvider: metricnoop.NewMeterProvider()}} {
		c, err := lbd.NewConnector(dsn, WithStatementTelemetry(opts))
		if err == nil {
			c.Close()
			t.Fatalf("%+v: NewConnector succeeded", opts)
		}
		if !strings.Contains(err.Error(), "otel.GetTracerProvider()") {
			t.Errorf("%+v: %v; want an error naming the global providers", opts, err)
		}
	}
	c, err := lbd.NewConnector(dsn, WithStatementTelemetry(StatementOptions{
		TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
