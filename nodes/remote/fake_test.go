package remote

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
)

func TestMain(m *testing.M) {
	// Proxies are stopped on purpose; keep go-sql-driver quiet about the broken connections.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	// The per-machine overrides must not leak from the environment into the tests.
	os.Unsetenv(EnvAZ)
	os.Unsetenv(EnvIP)
	testkit.VerifyTestMain(m)
}

// fakeCS is a config-server for tests: it speaks lb-driver's protocol for schemas whose lists
// the test changes at will, with AZ sets (chosen by the az parameter, or by the client's ip),
// an optional API key, and faults.
type fakeCS struct {
	srv *httptest.Server

	mu          sync.Mutex
	schemas     map[string]*fakeSchema
	key         string
	fault       string // see setFault
	failDefault bool   // answer policy=default requests with HTTP 500
	redirectTo  string // where the "redirect" fault sends the client
	reqs        []fakeReq
	release     chan struct{} // closed when the fake shuts down, ending hung requests
	closeOnce   sync.Once
}

type fakeSchema struct {
	def  []string
	az   map[string][]string // AZ → its proxies (the AZ policy is on when not empty)
	ipAZ map[string]string   // client IP → AZ
}

// fakeReq is one request as the fake saw it.
type fakeReq struct {
	query  url.Values
	auth   string
	accept string
}

func newFakeCS(t testing.TB) *fakeCS {
	f := &fakeCS{schemas: map[string]*fakeSchema{}, release: make(chan struct{})}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.close)
	return f
}

// close shuts the fake down; its address then refuses connections.
func (f *fakeCS) close() {
	f.closeOnce.Do(func() {
		close(f.release)
		f.srv.Close()
	})
}

func (f *fakeCS) addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *fakeCS) schema(name string) *fakeSchema {
	sc := f.schemas[name]
	if sc == nil {
		sc = &fakeSchema{az: map[string][]string{}, ipAZ: map[string]string{}}
		f.schemas[name] = sc
	}
	return sc
}

// setList sets a schema's default (whole) list.
func (f *fakeCS) setList(schema string, list ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schema(schema).def = slices.Clone(list)
}

// setAZ sets the proxies of one AZ, which turns the AZ policy on for the schema.
func (f *fakeCS) setAZ(schema, az string, list ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schema(schema).az[az] = slices.Clone(list)
}

func (f *fakeCS) dropSchema(schema string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.schemas, schema)
}

func (f *fakeCS) setKey(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key = k
}

// setFault makes every answer wrong in one way: "hang" (never answers), "garbage" (not
// JSON), "empty" (an empty list), "malformed" (an entry that is not host:port), "status500",
// "code500" (JSON code 500), "redirect" (HTTP 302 to the URL set by setRedirect), "hugemd5"
// (a list with an md5 of 512 KiB), "hugebody" (a body of 2 MiB), "hugeheader" (a header of
// 128 KiB); "" answers normally.
func (f *fakeCS) setFault(fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

// setRedirect sets the URL the "redirect" fault sends the client to.
func (f *fakeCS) setRedirect(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.redirectTo = url
}

func (f *fakeCS) setFailDefault(fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failDefault = fail
}

func (f *fakeCS) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func (f *fakeCS) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// countPolicy counts the requests whose policy parameter is p.
func (f *fakeCS) countPolicy(p string) int {
	n := 0
	for _, r := range f.requests() {
		if r.query.Get("policy") == p {
			n++
		}
	}
	return n
}

func (f *fakeCS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.reqs = append(f.reqs, fakeReq{query: q, auth: r.Header.Get("Authorization"), accept: r.Header.Get("Accept")})
	fault, key, failDefault, redirectTo := f.fault, f.key, f.failDefault, f.redirectTo
	var list []string
	sc, known := f.schemas[q.Get("schema")]
	if known {
		list = sc.def
		if q.Get("policy") != nodes.PolicyDefault && featureLevel(q) >= 2 {
			az := q.Get("az")
			if az == "" {
				az = sc.ipAZ[q.Get("ip")]
			}
			if l, ok := sc.az[az]; ok {
				list = l
			}
		}
		list = slices.Clone(list)
	}
	f.mu.Unlock()

	if r.URL.Path != fetchPath {
		http.NotFound(w, r)
		return
	}
	switch fault {
	case "hang":
		select {
		case <-r.Context().Done():
		case <-f.release:
		}
		return
	case "garbage":
		io.WriteString(w, "<html>502 Bad Gateway</html>")
		return
	case "status500":
		http.Error(w, `{"code":500}`, http.StatusInternalServerError)
		return
	case "code500":
		io.WriteString(w, `{"code":500,"msg":"backend down"}`)
		return
	case "redirect":
		http.Redirect(w, r, redirectTo+r.URL.RequestURI(), http.StatusFound)
		return
	case "hugebody":
		io.WriteString(w, `{"code":200,"data":["10.0.0.1:1"],"msg":"`+strings.Repeat("x", 2<<20)+`"}`)
		return
	case "hugeheader":
		w.Header().Set("X-Filler", strings.Repeat("x", 128<<10))
		io.WriteString(w, `{"code":304}`)
		return
	}
	if !known {
		io.WriteString(w, `{"code":404}`)
		return
	}
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"code":403,"msg":"illegal api key","data":null}`)
		return
	}
	if failDefault && q.Get("policy") == nodes.PolicyDefault {
		http.Error(w, "default set unavailable", http.StatusInternalServerError)
		return
	}
	switch fault {
	case "empty":
		list = []string{}
	case "malformed":
		list = append(list, "not-an-address")
	}
	sum := nodes.ListMD5(list)
	if fault == "hugemd5" {
		sum = strings.Repeat("a", 512<<10)
	}
	if q.Get("md5") == sum {
		io.WriteString(w, `{"code":304}`)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"code": 200, "md5": sum, "data": list})
}

func featureLevel(q url.Values) int {
	n, _ := strconv.Atoi(q.Get("clientFeatureLevel"))
	return n
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// logRecorder is a slog.Handler that keeps every record as one line of text.
// logRecorder keeps every log line, rendered as "LEVEL message k=v ...".
type logRecorder struct{ testkit.Logs }

func (l *logRecorder) logger() *slog.Logger { return l.Logs.Logger() }

func (l *logRecorder) all() []string { return l.Lines() }

func (l *logRecorder) count(parts ...string) int {
	n := 0
	for _, line := range l.all() {
		match := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				match = false
				break
			}
		}
		if match {
			n++
		}
	}
	return n
}

func (l *logRecorder) dump(t testing.TB) {
	t.Helper()
	for _, line := range l.all() {
		t.Log(line)
	}
}

var waitFor = testkit.WaitFor

// updates collects the sets a source pushes.
type updates struct {
	mu   sync.Mutex
	sets []nodes.Set
}

func (u *updates) push(s nodes.Set) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sets = append(u.sets, s)
}

func (u *updates) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sets)
}

func (u *updates) last() nodes.Set {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.sets) == 0 {
		return nodes.Set{}
	}
	return u.sets[len(u.sets)-1]
}

// fakeHealth is a nodes.Health the test sets by hand.
type fakeHealth struct {
	mu    sync.Mutex
	nodes map[string]fakeNode
	calls atomic.Int64
}

type fakeNode struct {
	up   bool
	good int
}

func newFakeHealth() *fakeHealth { return &fakeHealth{nodes: map[string]fakeNode{}} }

func (h *fakeHealth) set(up bool, good int, addrs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range addrs {
		h.nodes[a] = fakeNode{up: up, good: good}
	}
}

func (h *fakeHealth) NodeHealth(addr string) (bool, int, bool) {
	h.calls.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	n, ok := h.nodes[addr]
	return n.up, n.good, ok
}

// startSource builds and starts a source, closing it at test end.
func startSource(t testing.TB, cfg Config, h nodes.Health) (*Source, *updates, nodes.Set) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	src, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { src.Close() })
	if h != nil {
		src.UseHealth(h)
	}
	u := &updates{}
	set, err := src.Start(context.Background(), u.push)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return src, u, set
}
