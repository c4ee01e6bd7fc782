package configserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

func TestHealth(t *testing.T) {
	m := mustMemory(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, _, logs := startServer(t, m, func(c *Config) { c.DrainWindow = 300 * time.Millisecond })
	const local = "127.0.0.1:40000"
	admin := s.AdminHandler()
	expect := func(path, remote string, status int, body string) {
		t.Helper()
		h, method := http.Handler(s), http.MethodGet
		if path == "/health/offline" || path == "/health/online" {
			h, method = admin, http.MethodPost
		}
		rec := serve(h, method, path, remote)
		if rec.Code != status || rec.Body.String() != body {
			t.Fatalf("%s from %s: %d %s, want %d %s", path, remote, rec.Code, rec.Body, status, body)
		}
	}
	ok := `{"code":200}`
	down := `{"code":500,"msg":null,"data":null}`

	expect("/health/status", local, 200, ok)
	expect("/health/check", local, 200, ok)
	// Health calls alone are not traffic: going offline answers 200 at once.
	expect("/health/offline", local, 200, ok)
	expect("/health/status", local, 500, down)
	expect("/health/check", local, 200, ok)
	if s.Online() {
		t.Fatal("Online after /health/offline")
	}
	expect("/health/online", local, 200, ok)
	expect("/health/status", local, 200, ok)

	// With traffic in the drain window, offline answers 500 until the window has passed.
	serve(s, http.MethodGet, "/fetch_sql_proxy_list?schema=s", "127.0.0.5:1")
	rec := serve(admin, http.MethodPost, "/health/offline", local)
	if rec.Code != 500 {
		t.Fatalf("offline right after traffic: %d %s", rec.Code, rec.Body)
	}
	expect("/health/status", local, 500, down)
	// Requests are still answered while offline.
	if r := decode(t, serve(s, http.MethodGet, "/fetch_sql_proxy_list?schema=s", "127.0.0.5:1")); r.Code != 200 {
		t.Fatalf("fetch while offline: %s", r.raw)
	}
	eventually(t, 3*time.Second, "offline to answer 200 once traffic stopped", func() bool {
		return serve(admin, http.MethodPost, "/health/offline", local).Code == 200
	})
	expect("/health/status", local, 500, down)
	expect("/health/online", "[::1]:40000", 200, ok)
	expect("/health/status", local, 200, ok)

	// Not from loopback: refused, state unchanged.
	notAllowed := `{"code":403,"msg":"not allowed","data":null}`
	for _, remote := range []string{"192.0.2.10:5555", "[2001:db8::1]:5555", "garbage"} {
		expect("/health/offline", remote, 403, notAllowed)
		expect("/health/online", remote, 403, notAllowed)
	}
	expect("/health/status", local, 200, ok)
	if len(logs.lines("refused", "192.0.2.10")) == 0 {
		t.Error("refusal not logged")
	}
	// IPv4-mapped loopback is loopback.
	expect("/health/offline", "[::ffff:127.0.0.1]:1", 200, ok)
	expect("/health/online", "[::ffff:127.0.0.1]:1", 200, ok)
}

func TestHealthRemoteAllowed(t *testing.T) {
	m := mustMemory(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, _, _ := startServer(t, m, func(c *Config) { c.AllowRemoteOnlineOffline = true })
	if rec := serve(s.AdminHandler(), http.MethodPost, "/health/offline", "192.0.2.10:5555"); rec.Code != 200 {
		t.Fatalf("remote offline: %d %s", rec.Code, rec.Body)
	}
	if s.Online() {
		t.Fatal("still online")
	}
	if rec := serve(s.AdminHandler(), http.MethodPost, "/health/online", "192.0.2.10:5555"); rec.Code != 200 || !s.Online() {
		t.Fatalf("remote online: %d %s", rec.Code, rec.Body)
	}
}
