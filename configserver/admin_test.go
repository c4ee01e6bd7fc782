package configserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

const testAdminToken = "0123456789abcdef-admin"

var adminAuth = []string{"Authorization", "Bearer " + testAdminToken}

// adminCall is one request to an admin endpoint with the method that performs it.
type adminCall struct{ method, path string }

var adminCalls = []adminCall{
	{http.MethodGet, "/monitor"},
	{http.MethodPost, "/reload"},
	{http.MethodPost, "/health/offline"},
	{http.MethodPost, "/health/online"},
}

// countingBackend is a Memory that counts reloads and records when each started.
type countingBackend struct {
	*Memory
	mu       sync.Mutex
	starts   []time.Time
	inFlight atomic.Int32
	overlap  atomic.Bool
	hold     time.Duration // each reload takes this long
}

func (c *countingBackend) Reload(ctx context.Context) error {
	if c.inFlight.Add(1) > 1 {
		c.overlap.Store(true)
	}
	defer c.inFlight.Add(-1)
	c.mu.Lock()
	c.starts = append(c.starts, time.Now())
	c.mu.Unlock()
	time.Sleep(c.hold)
	return c.Memory.Reload(ctx)
}

func (c *countingBackend) reloads() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.starts...)
}

func newCounting(t *testing.T, docs ...*nodes.Document) *countingBackend {
	return &countingBackend{Memory: mustMemory(t, docs...)}
}

func TestPublicHandlerServesNoAdminEndpoint(t *testing.T) {
	cb := newCounting(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, hs, _ := startServer(t, cb, nil)
	for _, c := range adminCalls {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, _ := http.NewRequest(method, hs.URL+c.path, nil)
			r := do(t, req)
			if r.status != http.StatusNotFound || r.Msg == nil || *r.Msg != msgAdminOnly {
				t.Errorf("public %s %s: %d %s", method, c.path, r.status, r.raw)
			}
			if strings.Contains(r.raw, "127.0.0.1:1") {
				t.Errorf("public %s %s shows a proxy: %s", method, c.path, r.raw)
			}
		}
	}
	if !s.Online() || len(cb.reloads()) != 0 {
		t.Fatalf("the public handler changed state: online %v, %d reloads", s.Online(), len(cb.reloads()))
	}
	// What clients and load balancers need stays public.
	for _, path := range []string{"/health/status", "/health/check", "/fetch_sql_proxy_list?schema=s"} {
		if r := get(t, hs.URL+path); r.status != 200 || r.Code != 200 {
			t.Errorf("public %s: %d %s", path, r.status, r.raw)
		}
	}
}

func TestAdminTokenRequired(t *testing.T) {
	cb := newCounting(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, _, logs := startServer(t, cb, func(c *Config) { c.AdminToken = testAdminToken })
	admin := startAdmin(t, s)
	bad := [][]string{
		nil,
		{"Authorization", ""},
		{"Authorization", "Bearer "},
		{"Authorization", testAdminToken}, // no scheme
		{"Authorization", "Basic " + testAdminToken}, // another scheme
		{"Authorization", "Bearer " + testAdminToken + "x"},
		{"Authorization", "Bearer " + testAdminToken[:len(testAdminToken)-1]},
		{"Authorization", "Bearer wrong-token-0123456789"},
	}
	for _, c := range adminCalls {
		for _, h := range bad {
			req, _ := http.NewRequest(c.method, admin.URL+c.path, nil)
			for i := 0; i+1 < len(h); i += 2 {
				req.Header.Set(h[i], h[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with %q: %d %q", c.method, c.path, h, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	if !s.Online() || len(cb.reloads()) != 0 {
		t.Fatalf("refused requests changed state: online %v, %d reloads", s.Online(), len(cb.reloads()))
	}
	if strings.Contains(logs.String(), "0123456789") {
		t.Errorf("a token reached the log:\n%s", logs)
	}
	if len(logs.lines("admin request refused", "wrong admin token")) == 0 || len(logs.lines("admin request refused", "no admin token")) == 0 {
		t.Errorf("refusals not logged:\n%s", logs)
	}

	// With the token, every endpoint works, from any Host.
	for _, c := range adminCalls {
		req, _ := http.NewRequest(c.method, admin.URL+c.path, nil)
		req.Host = "config-admin.example:8081"
		req.Header.Set(adminAuth[0], adminAuth[1])
		if r := do(t, req); r.status != 200 {
			t.Errorf("%s %s with the token: %d %s", c.method, c.path, r.status, r.raw)
		}
	}
	if len(cb.reloads()) != 1 {
		t.Errorf("%d reloads, want 1", len(cb.reloads()))
	}
}

func TestAdminTokenRules(t *testing.T) {
	for _, token := range []string{"short", "0123456789abcde", "0123456789abcdef ghij", "0123456789abcdef\x00", "0123456789abcdef\tx"} {
		_, err := New(context.Background(), Config{Backend: mustMemory(t), Logger: discard(), ProbeInterval: -1, AdminToken: token})
		if err == nil {
			t.Errorf("admin token %q accepted", token)
		} else if strings.Contains(err.Error(), token) {
			t.Errorf("the error shows the token: %v", err)
		}
	}
}

func TestAdminRefusesWebPages(t *testing.T) {
	for _, token := range []string{"", testAdminToken} {
		cb := newCounting(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
		s, _, _ := startServer(t, cb, func(c *Config) { c.AdminToken = token })
		admin := startAdmin(t, s)
		for _, c := range adminCalls {
			for _, h := range [][]string{
				{"Origin", "https://evil.example"},
				{"Origin", "null"},
				{"Origin", admin.URL}, // even its own origin: no page of it exists
				{"Sec-Fetch-Site", "cross-site"},
				{"Sec-Fetch-Site", "same-site"},
				{"Sec-Fetch-Site", "same-origin"},
			} {
				req, _ := http.NewRequest(c.method, admin.URL+c.path, strings.NewReader("a=b"))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // a simple form
				req.Header.Set(h[0], h[1])
				if token != "" {
					req.Header.Set(adminAuth[0], adminAuth[1]) // a stolen cookie would be no better
				}
				if r := do(t, req); r.status != http.StatusForbidden || r.Msg == nil || *r.Msg != msgCrossOrigin {
					t.Errorf("token %v: %s %s with %s: %d %s", token != "", c.method, c.path, h, r.status, r.raw)
				}
			}
		}
		if !s.Online() || len(cb.reloads()) != 0 {
			t.Fatalf("a web page changed state: online %v, %d reloads", s.Online(), len(cb.reloads()))
		}
		// An address typed by the user is not a page.
		h := []string{"Sec-Fetch-Site", "none"}
		if token != "" {
			h = append(h, adminAuth...)
		}
		if r := get(t, admin.URL+"/monitor", h...); r.status != 200 {
			t.Errorf("typed address: %d %s", r.status, r.raw)
		}
	}
}

func TestAdminHostRuleWithoutToken(t *testing.T) {
	m := mustMemory(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, _, _ := startServer(t, m, nil)
	admin := s.AdminHandler()
	for _, host := range []string{"127.0.0.1:8081", "[::1]:8081", "localhost:8081", "LOCALHOST", "localhost.:1", "10.0.0.5", "[fd00::1]:8081", ""} {
		if rec := serve(admin, http.MethodGet, "/monitor", "127.0.0.1:1", "Host", host); rec.Code != 200 {
			t.Errorf("Host %q: %d %s", host, rec.Code, rec.Body)
		}
	}
	for _, host := range []string{"evil.example:8081", "evil.example", "localhost.evil.example", "127.0.0.1.nip.io:8081"} {
		for _, c := range adminCalls {
			if rec := serve(admin, c.method, c.path, "127.0.0.1:1", "Host", host); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "Host must be") {
				t.Errorf("Host %q %s %s: %d %s", host, c.method, c.path, rec.Code, rec.Body)
			}
		}
	}
	if !s.Online() {
		t.Fatal("a rebound name took the server offline")
	}
}

func TestAdminMethods(t *testing.T) {
	cb := newCounting(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, _, _ := startServer(t, cb, nil)
	admin := startAdmin(t, s)
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/reload", "POST"},
		{http.MethodHead, "/reload", "POST"},
		{http.MethodGet, "/health/offline", "POST"},
		{http.MethodGet, "/health/online", "POST"},
		{http.MethodPut, "/health/offline", "POST"},
		{http.MethodPost, "/monitor", "GET, HEAD"},
		{http.MethodDelete, "/monitor", "GET, HEAD"},
		{http.MethodPost, "/health/status", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(c.method, admin.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d, Allow %q, want 405 and %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	if !s.Online() || len(cb.reloads()) != 0 {
		t.Fatalf("a GET changed state: online %v, %d reloads", s.Online(), len(cb.reloads()))
	}
	if r := get(t, admin.URL+"/nowhere"); r.status != 404 {
		t.Errorf("unknown admin path: %d %s", r.status, r.raw)
	}
}

func TestMonitorHidesProtectedSchemas(t *testing.T) {
	docs := func() []*nodes.Document {
		return []*nodes.Document{
			{Schema: "pub", Proxy: []string{"127.0.0.1:1", "127.0.0.9:9"}},
			{Schema: "secret_auth", AuthEnable: true, APIKeys: []string{"k-auth"}, Proxy: []string{"127.0.0.1:1", "127.0.0.2:2"},
				AZProxy: map[string][]string{"az1": {"127.0.0.3:3"}}, ProxyPolicy: nodes.PolicyAZ},
			{Schema: "secret_keys", APIKeys: []string{"k-keys"}, Proxy: []string{"127.0.0.4:4"}},
		}
	}
	hiddenWords := []string{"secret", "k-auth", "k-keys", "127.0.0.2:2", "127.0.0.3:3", "127.0.0.4:4"}

	// No admin token configured: nobody is authenticated, protected schemas never show.
	s, hs, logs := startServer(t, mustMemory(t, docs()...), nil)
	rec := serve(s.AdminHandler(), http.MethodGet, "/monitor", "127.0.0.1:1")
	for _, w := range hiddenWords {
		if strings.Contains(rec.Body.String(), w) {
			t.Errorf("unauthenticated /monitor shows %q: %s", w, rec.Body)
		}
	}
	m := getMonitor(t, s)
	if m.Info[0].SchemaSize != 3 || m.Info[0].HiddenSchemaSize != 2 || len(m.SchemaInfo) != 1 || len(m.ProxyDetail) != 2 {
		t.Errorf("unauthenticated /monitor: %+v", m)
	}
	// Fetches without the key show nothing of the schema, in the answer or the log.
	for _, key := range []string{"", "guess"} {
		for _, schema := range []string{"secret_auth"} {
			r := (&javaClient{base: hs.URL, schema: schema, key: key}).fetch(t)
			for _, w := range hiddenWords[2:] {
				if strings.Contains(r.raw, w) {
					t.Errorf("fetch of %s with key %q shows %q: %s", schema, key, w, r.raw)
				}
			}
		}
	}
	for _, l := range logs.lines("secret") {
		if !strings.Contains(l, "serving schema") {
			t.Errorf("a request logged a protected schema: %s", l)
		}
	}

	// With a token configured, only a request carrying it sees them.
	s2, _, _ := startServer(t, mustMemory(t, docs()...), func(c *Config) { c.AdminToken = testAdminToken })
	if rec := serve(s2.AdminHandler(), http.MethodGet, "/monitor", "127.0.0.1:1"); rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("/monitor without the token: %d %s", rec.Code, rec.Body)
	}
	m = getMonitor(t, s2, adminAuth...)
	if m.Info[0].SchemaSize != 3 || m.Info[0].HiddenSchemaSize != 0 || len(m.SchemaInfo) != 3 || len(m.ProxyDetail) != 6 {
		t.Errorf("authenticated /monitor: %+v", m)
	}
	if rec := serve(s2.AdminHandler(), http.MethodGet, "/monitor", "127.0.0.1:1", adminAuth...); strings.Contains(rec.Body.String(), "k-auth") {
		t.Errorf("/monitor shows an API key: %s", rec.Body)
	}
}

func TestReloadCoalesced(t *testing.T) {
	const interval = 300 * time.Millisecond
	cb := newCounting(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	cb.hold = 20 * time.Millisecond
	s, _, _ := startServer(t, cb, func(c *Config) { c.ReloadInterval = interval })
	admin := startAdmin(t, s)

	start := time.Now()
	var wg sync.WaitGroup
	for round := range 3 {
		for range 10 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				asked := time.Now()
				req, _ := http.NewRequest(http.MethodPost, admin.URL+"/reload", nil)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				answered := time.Now()
				if resp.StatusCode != 200 {
					t.Errorf("/reload: %d", resp.StatusCode)
				}
				// The caller's answer comes from a read that started after it asked.
				for _, at := range cb.reloads() {
					if !at.Before(asked) && !at.After(answered) {
						return
					}
				}
				t.Errorf("round %d: no read started between the call (%v) and its answer (%v)", round, asked.Sub(start), answered.Sub(start))
			}()
		}
		time.Sleep(interval / 3)
	}
	wg.Wait()
	elapsed := time.Since(start)
	starts := cb.reloads()
	if limit := 1 + int(elapsed/interval); len(starts) > limit || len(starts) == 0 {
		t.Errorf("30 calls in %v made %d reads, want 1 to %d", elapsed, len(starts), limit)
	}
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < interval {
			t.Errorf("reads %d and %d started %v apart, want at least %v", i-1, i, gap, interval)
		}
	}
	if cb.overlap.Load() {
		t.Error("two reads ran at once")
	}
}

func TestReloadWaitEndsWithCallerAndClose(t *testing.T) {
	cb := newCounting(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, err := New(context.Background(), Config{Backend: cb, Logger: discard(), ProbeInterval: -1, ReloadInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The next read waits an hour: a caller that gives up gets its context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Reload(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Reload past its deadline: %v", err)
	}
	// One still waiting is answered by Close.
	waiting := make(chan error, 1)
	go func() { waiting <- s.Reload(context.Background()) }()
	eventually(t, 5*time.Second, "the reload loop to be waiting", func() bool {
		s.reloads.mu.Lock()
		defer s.reloads.mu.Unlock()
		return s.reloads.pending != nil
	})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, errServerClosed) {
			t.Errorf("waiting Reload at Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Reload outlived Close")
	}
	if err := s.Reload(context.Background()); !errors.Is(err, errServerClosed) {
		t.Errorf("Reload after Close: %v", err)
	}
	if n := len(cb.reloads()); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}
