// Package remotefake is a config-server for tests of the config-server source (nodes/remote):
// it speaks lb-driver's protocol for schemas whose lists a test changes at will, with AZ sets,
// an optional API key and a catalogue of faults. The root module's own tests of the source and
// the end-to-end tests in internal/e2e share it. It is not for users.
package remotefake

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/lbd-go/lbd/nodes"
)

// FetchPath is the path lb-driver's clients fetch a proxy list from.
const FetchPath = "/fetch_sql_proxy_list"

// Server is a config-server for tests: it speaks lb-driver's protocol for schemas whose lists
// the test changes at will, with AZ sets (chosen by the az parameter, or by the client's ip),
// an optional API key, and faults.
// Server is one fake config-server; AZ sets are chosen by the az parameter, or by the client's
// ip. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu          sync.Mutex
	schemas     map[string]*schemaLists
	key         string
	fault       string // see SetFault
	failDefault bool   // answer policy=default requests with HTTP 500
	redirectTo  string // where the "redirect" fault sends the client
	reqs        []Request
	release     chan struct{} // closed when the fake shuts down, ending hung requests
	closeOnce   sync.Once
}

type schemaLists struct {
	def  []string
	az   map[string][]string // AZ → its proxies (the AZ policy is on when not empty)
	ipAZ map[string]string   // client IP → AZ
}

// Request is one request as the fake saw it.
type Request struct {
	Query  url.Values
	Auth   string // the Authorization header
	Accept string // the Accept header
}

func New(t testing.TB) *Server {
	f := &Server{schemas: map[string]*schemaLists{}, release: make(chan struct{})}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.Close)
	return f
}

// Close shuts the fake down; its address then refuses connections.
func (f *Server) Close() {
	f.closeOnce.Do(func() {
		close(f.release)
		f.srv.Close()
	})
}

func (f *Server) Addr() string { return strings.TrimPrefix(f.srv.URL, "http://") }

func (f *Server) schema(name string) *schemaLists {
	sc := f.schemas[name]
	if sc == nil {
		sc = &schemaLists{az: map[string][]string{}, ipAZ: map[string]string{}}
		f.schemas[name] = sc
	}
	return sc
}

// SetList sets a schema's default (whole) list.
func (f *Server) SetList(schema string, list ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schema(schema).def = slices.Clone(list)
}

// SetAZ sets the proxies of one AZ, which turns the AZ policy on for the schema.
func (f *Server) SetAZ(schema, az string, list ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.schema(schema).az[az] = slices.Clone(list)
}

func (f *Server) DropSchema(schema string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.schemas, schema)
}

func (f *Server) SetKey(k string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key = k
}

// SetFault makes every answer wrong in one way: "hang" (never answers), "garbage" (not
// JSON), "empty" (an empty list), "malformed" (an entry that is not host:port), "status500",
// "code500" (JSON code 500), "redirect" (HTTP 302 to the URL set by SetRedirect), "hugemd5"
// (a list with an md5 of 512 KiB), "hugebody" (a body of 2 MiB), "hugeheader" (a header of
// 128 KiB); "" answers normally.
func (f *Server) SetFault(fault string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fault = fault
}

// SetRedirect sets the URL the "redirect" fault sends the client to.
func (f *Server) SetRedirect(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.redirectTo = url
}

func (f *Server) SetFailDefault(fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failDefault = fail
}

func (f *Server) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func (f *Server) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// CountPolicy counts the requests whose policy parameter is p.
func (f *Server) CountPolicy(p string) int {
	n := 0
	for _, r := range f.Requests() {
		if r.Query.Get("policy") == p {
			n++
		}
	}
	return n
}

func (f *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.reqs = append(f.reqs, Request{Query: q, Auth: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept")})
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

	if r.URL.Path != FetchPath {
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

// DeadAddr returns a loopback address nothing listens on.
func DeadAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// NewTLS is New over HTTPS (a self-signed certificate); Client's transport trusts it. The
// server's error log is discarded: clients that look its address up connect without a
// handshake.
func NewTLS(t testing.TB) *Server {
	f := &Server{schemas: map[string]*schemaLists{}, release: make(chan struct{})}
	f.srv = httptest.NewUnstartedServer(f)
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.StartTLS()
	t.Cleanup(f.Close)
	return f
}

// URL returns the server's base URL, "http://127.0.0.1:port" or "https://…".
func (f *Server) URL() string { return f.srv.URL }

// TLSConfig returns a client TLS configuration that trusts a NewTLS server.
func (f *Server) TLSConfig() *tls.Config {
	return f.srv.Client().Transport.(*http.Transport).TLSClientConfig
}
