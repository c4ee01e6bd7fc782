package remotetest

import (
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
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/remote"
)

// TestMain fails the run when any goroutine outlives the tests.
func TestMain(m *testing.M) {
	// Proxies are stopped on purpose; keep go-sql-driver quiet about the broken connections.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	// The per-machine overrides must not leak from the environment into the tests.
	os.Unsetenv(remote.EnvAZ)
	os.Unsetenv(remote.EnvIP)
	goleak.VerifyTestMain(m)
}

// fetchPath is the path of lb-driver's protocol that the config-server answers on.
const fetchPath = "/fetch_sql_proxy_list"

// failLine is the log line of a poll round that no config-server answered usably.
const failLine = "no config-server gave a usable node list"

// fakeCS is a config-server for tests: it speaks lb-driver's protocol for schemas whose lists
// the test changes at will, with AZ sets (chosen by the az parameter, or by the client's ip),
// an optional API key, and faults.
type fakeCS struct {
	srv *httptest.Server

	mu        sync.Mutex
	schemas   map[string]*fakeSchema
	key       string
	fault     string // see setFault
	reqs      []fakeReq
	release   chan struct{} // closed when the fake shuts down, ending hung requests
	closeOnce sync.Once
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

func (f *fakeCS) setKey(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key = k
}

// setFault makes every answer wrong in one way: "hang" (never answers), "garbage" (not
// JSON), "empty" (an empty list), "malformed" (an entry that is not host:port), "status500",
// "code500" (JSON code 500), "hugemd5" (a list with an md5 of 512 KiB), "hugebody" (a body of
// 2 MiB), "hugeheader" (a header of 128 KiB); "" answers normally.
func (f *fakeCS) setFault(fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

func (f *fakeCS) requests() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
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
	fault, key := f.fault, f.key
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
