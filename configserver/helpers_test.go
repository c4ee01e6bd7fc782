package configserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// logBuffer collects log lines for assertions; it is safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the lines containing every one of the given substrings.
func (b *logBuffer) lines(subs ...string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		ok := l != ""
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLogger(t testing.TB) (*slog.Logger, *logBuffer) {
	var lb logBuffer
	var w io.Writer = &lb
	if testing.Verbose() {
		w = io.MultiWriter(&lb, testWriter{t})
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), &lb
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startServer starts a Server on backend and an HTTP server in front of it; both are closed at
// the end of the test.
func startServer(t *testing.T, backend Backend, mod func(*Config)) (*Server, *httptest.Server, *logBuffer) {
	t.Helper()
	log, lb := newLogger(t)
	return startServerLogged(t, backend, log, lb, mod)
}

// startServerLogged is startServer with a logger the backend shares.
func startServerLogged(t *testing.T, backend Backend, log *slog.Logger, lb *logBuffer, mod func(*Config)) (*Server, *httptest.Server, *logBuffer) {
	t.Helper()
	cfg := Config{Backend: backend, Logger: log, ProbeInterval: -1, ReloadInterval: -1}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, hs, lb
}

// javaClient asks for a proxy list the way lb-driver's RemoteSqlProxyProvider does: GET with
// the parameters in no particular order, Accept: application/json, the key as a Bearer token,
// and the md5 of the last answer once it has one.
type javaClient struct {
	base   string
	schema string
	key    string
	extra  map[string]string // AZ-era parameters, sent as lbd sends them
	md5    string
}

// fetchResult is what the Java driver reads from an answer.
type fetchResult struct {
	status int
	raw    string
	Code   int      `json:"code"`
	MD5    string   `json:"md5"`
	Data   []string `json:"data"`
	Msg    *string  `json:"msg"`
}

func (c *javaClient) fetch(t *testing.T) fetchResult {
	t.Helper()
	params := map[string]string{"schema": c.schema}
	if c.md5 != "" {
		params["md5"] = c.md5
	}
	for k, v := range c.extra {
		params[k] = v
	}
	var pairs []string
	for k, v := range params {
		pairs = append(pairs, url.QueryEscape(k)+"="+url.QueryEscape(v))
	}
	rand.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	req, err := http.NewRequest(http.MethodGet, c.base+"/fetch_sql_proxy_list?"+strings.Join(pairs, "&"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	r := do(t, req)
	if r.status == http.StatusOK && r.Code == 200 {
		c.md5 = r.MD5
	}
	return r
}

func do(t *testing.T, req *http.Request) fetchResult {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := fetchResult{status: resp.StatusCode, raw: string(body)}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("answer %q is not JSON: %v", body, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return r
}

func get(t *testing.T, u string, header ...string) fetchResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

// reload asks s's admin handler for POST /reload from loopback, without a network.
func reload(t *testing.T, s *Server, header ...string) fetchResult {
	t.Helper()
	return decode(t, serve(s.AdminHandler(), http.MethodPost, "/reload", "127.0.0.1:1", header...))
}

// startAdmin serves s's admin handler over HTTP on loopback until the test ends.
func startAdmin(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(s.AdminHandler())
	t.Cleanup(hs.Close)
	return hs
}

// serve runs one request through h with the given source address, without a network. Its Host
// is 127.0.0.1 unless the header pairs give a "Host".
func serve(h http.Handler, method, target, remoteAddr string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	req.RemoteAddr = remoteAddr
	req.Host = "127.0.0.1"
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decode(t *testing.T, rec *httptest.ResponseRecorder) fetchResult {
	t.Helper()
	r := fetchResult{status: rec.Code, raw: rec.Body.String()}
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
		t.Fatalf("answer %q is not JSON: %v", rec.Body.String(), err)
	}
	return r
}

// eventually polls cond every 5 ms until it holds, failing t when within passes first.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
	}
}

func mustMemory(t *testing.T, docs ...*nodes.Document) *Memory {
	t.Helper()
	m, err := NewMemory(docs...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
