package configserver

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/lbd-go/lbd/nodes"
)

// TestMD5Compatibility checks the md5 of every answer against a value computed here from the
// compact JSON text written out by hand, as the Java server produces it, and checks the whole
// answer byte for byte.
func TestMD5Compatibility(t *testing.T) {
	hash := func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	cases := []struct {
		proxy []string
		json  string // the sorted list as compact JSON
	}{
		{[]string{"127.0.0.1:3306", "127.0.0.2:3306"}, `["127.0.0.1:3306","127.0.0.2:3306"]`},
		{[]string{"127.0.0.2:3306", "127.0.0.1:3306"}, `["127.0.0.1:3306","127.0.0.2:3306"]`},
		{[]string{"127.0.0.10:1", "127.0.0.9:1"}, `["127.0.0.10:1","127.0.0.9:1"]`},
		{[]string{"db-b.local:2883", "db-a.local:2883", "[::1]:2883"}, `["[::1]:2883","db-a.local:2883","db-b.local:2883"]`},
		{[]string{"localhost:1"}, `["localhost:1"]`},
	}
	for _, c := range cases {
		m := mustMemory(t, &nodes.Document{Schema: "s", Proxy: c.proxy})
		_, hs, _ := startServer(t, m, nil)
		want := hash(c.json)
		cl := &javaClient{base: hs.URL, schema: "s"}
		r := cl.fetch(t)
		if r.MD5 != want {
			t.Errorf("%v: md5 %s, want %s (md5 of %s)", c.proxy, r.MD5, want, c.json)
		}
		if wantBody := `{"code":200,"md5":"` + want + `","data":` + c.json + `}`; r.raw != wantBody {
			t.Errorf("%v: body %s, want %s", c.proxy, r.raw, wantBody)
		}
		if got := nodes.ListMD5(c.proxy); got != want {
			t.Errorf("nodes.ListMD5(%v) = %s, want %s", c.proxy, got, want)
		}
	}
}

func TestJavaClientFlow(t *testing.T) {
	doc := &nodes.Document{Schema: "im_user", AuthEnable: true, APIKeys: []string{"k1", "k2"},
		Proxy: []string{"127.0.0.3:2883", "127.0.0.1:2883", "127.0.0.2:2883"}}
	m := mustMemory(t, doc)
	_, hs, _ := startServer(t, m, nil)
	cl := &javaClient{base: hs.URL, schema: "im_user", key: "k2"}

	r := cl.fetch(t) // first fetch: no md5
	if r.status != 200 || r.Code != 200 || len(r.MD5) != 32 {
		t.Fatalf("first fetch: %d %s", r.status, r.raw)
	}
	if want := []string{"127.0.0.1:2883", "127.0.0.2:2883", "127.0.0.3:2883"}; !slices.Equal(r.Data, want) {
		t.Fatalf("data %v, want %v", r.Data, want)
	}
	first := r.MD5
	for range 2 {
		if r := cl.fetch(t); r.status != 200 || r.raw != `{"code":304}` {
			t.Fatalf("same md5: %d %s", r.status, r.raw)
		}
	}

	changed := *doc
	changed.Proxy = []string{"127.0.0.1:2883", "127.0.0.4:2883"}
	if err := m.Put(&changed); err != nil {
		t.Fatal(err)
	}
	r = cl.fetch(t) // right after the change: no stale 304
	if r.Code != 200 || r.MD5 == first || !slices.Equal(r.Data, []string{"127.0.0.1:2883", "127.0.0.4:2883"}) {
		t.Fatalf("after a change: %s", r.raw)
	}
	if r := cl.fetch(t); r.Code != 304 {
		t.Fatalf("after the change, same md5: %s", r.raw)
	}

	// Unknown schema: HTTP 200 with code 404, whatever the key.
	for _, key := range []string{"", "k1", "nope"} {
		other := &javaClient{base: hs.URL, schema: "nope", key: key}
		if r := other.fetch(t); r.status != 200 || r.raw != `{"code":404}` {
			t.Fatalf("unknown schema with key %q: %d %s", key, r.status, r.raw)
		}
	}

	// A deleted schema is no longer served.
	m.Delete("im_user")
	if r := cl.fetch(t); r.raw != `{"code":404}` {
		t.Fatalf("deleted schema: %s", r.raw)
	}
}

func TestAuth(t *testing.T) {
	m := mustMemory(t,
		&nodes.Document{Schema: "locked", AuthEnable: true, APIKeys: []string{"secret-1", "k"}, Proxy: []string{"127.0.0.1:1"}},
		&nodes.Document{Schema: "open", APIKeys: []string{"unused"}, Proxy: []string{"127.0.0.1:1"}},
	)
	_, hs, _ := startServer(t, m, nil)
	u := hs.URL + "/fetch_sql_proxy_list?schema=locked"
	missing := `{"code":403,"msg":"missing api key","data":null}`
	illegal := `{"code":403,"msg":"illegal api key","data":null}`
	cases := []struct {
		header   []string
		wantBody string // "" means a 200 list
	}{
		{nil, missing},
		{[]string{"Authorization", ""}, missing},
		{[]string{"Authorization", "Bearer "}, missing},
		{[]string{"Authorization", "Bear"}, illegal},    // shorter than "Bearer ": Java answers 500
		{[]string{"Authorization", "k"}, illegal},       // a bare key
		{[]string{"Authorization", "Token k"}, illegal}, // Java strips any 6 letters and a space
		{[]string{"Authorization", "Basic secret-1"}, illegal},
		{[]string{"Authorization", "Bearer secret-2"}, illegal},
		{[]string{"Authorization", "Bearer secret-1x"}, illegal},
		{[]string{"Authorization", "Bearer secret-"}, illegal},
		{[]string{"Authorization", "BearerXsecret-1"}, illegal},
		{[]string{"Authorization", "Bearer secret-1"}, ""},
		{[]string{"Authorization", "Bearer k"}, ""},
		{[]string{"Authorization", "bearer   k "}, ""},
	}
	for _, c := range cases {
		r := get(t, u, c.header...)
		if c.wantBody == "" {
			if r.status != 200 || r.Code != 200 {
				t.Errorf("header %q: %d %s, want a list", c.header, r.status, r.raw)
			}
			continue
		}
		if r.status != http.StatusForbidden || r.raw != c.wantBody {
			t.Errorf("header %q: %d %s, want 403 %s", c.header, r.status, r.raw, c.wantBody)
		}
	}
	// A schema without auth.enable ignores the header.
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "x"}} {
		if r := get(t, hs.URL+"/fetch_sql_proxy_list?schema=open", h...); r.Code != 200 {
			t.Errorf("open schema with %q: %s", h, r.raw)
		}
	}
}

func TestHideUnknownSchemas(t *testing.T) {
	m := mustMemory(t, &nodes.Document{Schema: "s", AuthEnable: true, APIKeys: []string{"k"}, Proxy: []string{"127.0.0.1:1"}})
	_, hs, _ := startServer(t, m, func(c *Config) { c.HideUnknownSchemas = true })
	for _, schema := range []string{"s", "nope"} {
		r := get(t, hs.URL+"/fetch_sql_proxy_list?schema="+schema)
		if r.status != 403 || r.raw != `{"code":403,"msg":"missing api key","data":null}` {
			t.Errorf("%s without key: %d %s", schema, r.status, r.raw)
		}
		r = get(t, hs.URL+"/fetch_sql_proxy_list?schema="+schema, "Authorization", "Bearer guess")
		if r.status != 403 || r.raw != `{"code":403,"msg":"illegal api key","data":null}` {
			t.Errorf("%s with a wrong key: %d %s", schema, r.status, r.raw)
		}
	}
}

func TestRequestErrors(t *testing.T) {
	m := mustMemory(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, hs, _ := startServer(t, m, nil)
	if r := get(t, hs.URL+"/fetch_sql_proxy_list"); r.status != 400 || r.Code != 400 {
		t.Errorf("no schema: %d %s", r.status, r.raw)
	}
	if r := get(t, hs.URL+"/nowhere"); r.status != 404 || r.raw != `{"code":404,"msg":"not found","data":null}` {
		t.Errorf("unknown path: %d %s", r.status, r.raw)
	}
	rec := serve(s, http.MethodPost, "/fetch_sql_proxy_list?schema=s", "127.0.0.1:1")
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") == "" {
		t.Errorf("POST: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(s, http.MethodHead, "/fetch_sql_proxy_list?schema=s", "127.0.0.1:1"); rec.Code != 200 {
		t.Errorf("HEAD: %d", rec.Code)
	}
}

// failingBackend loads once and then fails every reload.
type failingBackend struct{ *Memory }

func (failingBackend) Reload(context.Context) error { return errors.New("store unreachable") }

func TestReloadEndpoint(t *testing.T) {
	m := mustMemory(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})
	s, _, _ := startServer(t, m, nil)
	admin := startAdmin(t, s)
	req, _ := http.NewRequest(http.MethodPost, admin.URL+"/reload", nil)
	if r := do(t, req); r.status != 200 || r.raw != `{"code":200}` {
		t.Errorf("POST /reload: %d %s", r.status, r.raw)
	}

	fb := failingBackend{mustMemory(t, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}})}
	s2, hs2, logs := startServer(t, fb, nil)
	if r := reload(t, s2); r.status != 200 || r.raw != `{"code":500}` {
		t.Errorf("failed /reload: %d %s", r.status, r.raw)
	}
	if len(logs.lines("reload failed", "store unreachable")) != 1 {
		t.Errorf("no log line for the failed reload:\n%s", logs)
	}
	if r := get(t, hs2.URL+"/fetch_sql_proxy_list?schema=s"); r.Code != 200 {
		t.Errorf("after a failed reload: %s", r.raw)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(context.Background(), Config{}); err == nil {
		t.Error("nil backend accepted")
	}
	if _, err := NewMemory(&nodes.Document{Schema: "s", Proxy: []string{"bad"}}); err == nil {
		t.Error("invalid document accepted")
	}
	if _, err := NewMemory(&nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1"}}, &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:2"}}); err == nil {
		t.Error("duplicate schema accepted")
	}
	m := mustMemory(t)
	if err := m.Put(&nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:1", "x"}}); err == nil {
		t.Error("Put accepted an invalid document")
	}
}
