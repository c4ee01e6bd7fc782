package configserver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	// Write a temporary file and rename it over, as careful tools do, so the poller never sees
	// a half-written file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

const fileV1 = `[
  {"schema":"a","proxy":["127.0.0.2:1","127.0.0.1:1"]},
  {"schema":"b","auth.enable":true,"api.keys":["k",7],"proxy":["127.0.0.1:2"]}
]`

func startFile(t *testing.T, content string, poll time.Duration) (string, *Server, string, *logBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schemas.json")
	writeFile(t, path, content)
	log, lb := newLogger(t)
	fb, err := NewFile(FileConfig{Path: path, PollInterval: poll, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	s, hs, logs := startServerLogged(t, fb, log, lb, nil)
	return path, s, hs.URL, logs
}

func TestFileFollowsChanges(t *testing.T) {
	path, s, base, logs := startFile(t, fileV1, 50*time.Millisecond)
	polls := func(n int) { // the poller's check, run here so that it surely ran n times
		for range n {
			s.backend.(*File).check()
		}
	}
	a := &javaClient{base: base, schema: "a"}
	if r := a.fetch(t); !slices.Equal(r.Data, []string{"127.0.0.1:1", "127.0.0.2:1"}) {
		t.Fatalf("a: %s", r.raw)
	}
	b := &javaClient{base: base, schema: "b", key: "7"} // a numeric key, stringified
	if r := b.fetch(t); r.Code != 200 {
		t.Fatalf("b: %s", r.raw)
	}

	// A change is followed without /reload.
	writeFile(t, path, `[{"schema":"a","proxy":["127.0.0.3:1"]}]`)
	eventually(t, 5*time.Second, "file change followed", func() bool {
		r := a.fetch(t)
		return r.Code == 200 && slices.Equal(r.Data, []string{"127.0.0.3:1"})
	})
	if r := b.fetch(t); r.raw != `{"code":404}` {
		t.Fatalf("b removed from the file: %s", r.raw)
	}

	// Bad files keep the old map, each logged once.
	bad := map[string]string{
		"invalid entry":    `[{"schema":"a","proxy":["127.0.0.4:1"]},{"schema":"c","proxy":["127.0.0.1"]}]`,
		"duplicate schema": `[{"schema":"a","proxy":["127.0.0.4:1"]},{"schema":"a","proxy":["127.0.0.5:1"]}]`,
		"not json":         `[{"schema":"a","proxy":["127.0.0.4:1"]`,
	}
	for name, content := range bad {
		writeFile(t, path, content)
		eventually(t, 5*time.Second, name+" logged", func() bool {
			return len(logs.lines("documents file rejected")) > 0
		})
		polls(3) // of the same bad file
		if n := len(logs.lines("documents file rejected")); n != 1 {
			t.Fatalf("%s: %d log lines, want 1:\n%s", name, n, logs)
		}
		if r := a.fetch(t); r.raw != `{"code":304}` {
			t.Fatalf("%s: the old document is not served: %s", name, r.raw)
		}
		logs.mu.Lock()
		logs.buf.Reset()
		logs.mu.Unlock()
	}

	// A missing file is logged once, and the old map kept.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "missing file logged", func() bool { return len(logs.lines("cannot stat")) > 0 })
	polls(3)
	if n := len(logs.lines("cannot stat")); n != 1 {
		t.Fatalf("%d lines for a missing file", n)
	}
	if r := a.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("missing file: %s", r.raw)
	}
	writeFile(t, path, `[{"schema":"a","proxy":["127.0.0.9:1"]}]`)
	eventually(t, 5*time.Second, "file back", func() bool { return slices.Equal(a.fetch(t).Data, []string{"127.0.0.9:1"}) })
}

func TestFileReloadEndpoint(t *testing.T) {
	path, s, base, _ := startFile(t, fileV1, -1) // no polling: only /reload
	a := &javaClient{base: base, schema: "a"}
	first := a.fetch(t)
	writeFile(t, path, `[{"schema":"a","proxy":["127.0.0.3:1"]}]`)
	select { // with polling off no poller runs, so nothing but /reload can read the change
	case <-s.backend.(*File).done:
	default:
		t.Fatal("a poller runs with polling off")
	}
	if r := a.fetch(t); r.Code != 304 {
		t.Fatalf("changed without polling or /reload: %s", r.raw)
	}
	if r := reload(t, s); r.raw != `{"code":200}` {
		t.Fatalf("/reload: %s", r.raw)
	}
	if r := a.fetch(t); r.Code != 200 || r.MD5 == first.MD5 || !slices.Equal(r.Data, []string{"127.0.0.3:1"}) {
		t.Fatalf("after /reload: %s", r.raw)
	}
	writeFile(t, path, `[{"schema":"a","proxy":[]}]`)
	if r := reload(t, s); r.raw != `{"code":500}` {
		t.Fatalf("/reload of a bad file: %s", r.raw)
	}
	if r := a.fetch(t); r.Code != 304 {
		t.Fatalf("bad file replaced the map: %s", r.raw)
	}
}

func TestFileYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "schemas.yaml")
	writeFile(t, path, `
- schema: a
  auth.enable: true
  api.keys: [k1, 42]
  proxy: [127.0.0.1:2883, 127.0.0.2:2883]
  az.list: {az1: [127.1.0.0/16]}
  az.proxy: {az1: [127.0.0.1:2883]}
  proxy.policy: az
`)
	fb, err := NewFile(FileConfig{Path: path, PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, hs, _ := startServer(t, fb, nil)
	c := &javaClient{base: hs.URL, schema: "a", key: "42", extra: map[string]string{"clientFeatureLevel": "2", "ip": "127.1.0.7"}}
	if r := c.fetch(t); !slices.Equal(r.Data, []string{"127.0.0.1:2883"}) {
		t.Fatalf("%s", r.raw)
	}
}

func TestFileBadAtStart(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"empty":          "",
		"bad entry":      `[{"schema":"a","proxy":["127.0.0.1:1"]},{"schema":"b","proxy":["127.0.0.1:1","nohost"]}]`,
		"duplicate":      `[{"schema":"a","proxy":["127.0.0.1:1"]},{"schema":"a","proxy":["127.0.0.1:2"]}]`,
		"auth no keys":   `[{"schema":"a","auth.enable":true,"proxy":["127.0.0.1:1"]}]`,
		"yaml not list":  "schema: a\nproxy: [127.0.0.1:1]\n",
		"yaml bad entry": "- schema: a\n  proxy: [127.0.0.1]\n",
	}
	for name, content := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		writeFile(t, path, content)
		fb, err := NewFile(FileConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(context.Background(), Config{Backend: fb, ProbeInterval: -1})
		if err == nil {
			s.Close()
			t.Errorf("%s: started", name)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
	fb, _ := NewFile(FileConfig{Path: filepath.Join(dir, "missing.json")})
	if _, err := New(context.Background(), Config{Backend: fb}); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := NewFile(FileConfig{}); err == nil {
		t.Error("empty path accepted")
	}
}

func TestParseDocuments(t *testing.T) {
	docs, err := ParseDocuments([]byte(`[]`))
	if err != nil || len(docs) != 0 {
		t.Fatalf("empty array: %v %v", docs, err)
	}
	docs, err = ParseDocuments([]byte(" \n" + fileV1))
	if err != nil || len(docs) != 2 || docs["b"].APIKeys[1] != "7" {
		t.Fatalf("%v %v", docs, err)
	}
	_, err = ParseDocuments([]byte(`[{"schema":"a","proxy":["127.0.0.1:1"]},{"schema":"b","proxy":["x:0"]}]`))
	if err == nil || !strings.Contains(err.Error(), "entry 1") {
		t.Fatalf("error %v does not name the entry", err)
	}
}

// One schema's document alone, as etcd holds it and the operations guide shows it, is a valid
// file: the server serves that one schema.
func TestParseDocumentsOneDocument(t *testing.T) {
	const doc = `{"schema":"im_user","auth.enable":true,"api.keys":["k1"],"proxy":["10.0.0.1:2883","10.1.0.1:2883"],
 "az.list":{"az1":["10.0.0.0/16"],"az2":["10.1.0.0/16"]},
 "az.proxy":{"az1":["10.0.0.1:2883"],"az2":["10.1.0.1:2883"]},
 "proxy.policy":"az","weight":{"10.1.0.1:2883":2},
 "role":{"10.0.0.1:2883":"primary","10.1.0.1:2883":"replica"}}
`
	docs, err := ParseDocuments([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	d := docs["im_user"]
	if len(docs) != 1 || d == nil || len(d.Proxy) != 2 || d.ProxyPolicy != "az" || d.APIKeys[0] != "k1" {
		t.Fatalf("docs = %+v", docs)
	}
	if _, err := ParseDocuments([]byte(`{"schema":"a","proxy":["x:0"]}`)); err == nil || !strings.Contains(err.Error(), "entry 0") {
		t.Fatalf("an invalid single document: %v, want an error naming entry 0", err)
	}
}

// An API key with leading or trailing spaces can never match an Authorization header (HTTP
// trims header values): every backend refuses the document when it loads it, naming the schema
// and the fix but not the key.
func TestAPIKeyWithSurroundingSpacesIsRefused(t *testing.T) {
	for _, key := range []string{" secret-k1", "secret-k1 ", "\tsecret-k1"} {
		doc := `{"schema":"im_user","auth.enable":true,"api.keys":["ok-key",` + strconv.Quote(key) + `],"proxy":["10.0.0.1:2883"]}`
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s accepted the key %q", what, key)
				return
			}
			msg := err.Error()
			if !strings.Contains(msg, `schema "im_user"`) || !strings.Contains(msg, "api.keys[1]") ||
				!strings.Contains(msg, "remove them") || strings.Contains(msg, "secret-k1") {
				t.Errorf("%s: %q, want the schema, api.keys[1] and the fix named, and not the key", what, msg)
			}
		}
		_, err := ParseDocuments([]byte("[" + doc + "]"))
		check("the file backend", err)
		_, _, err = (&Etcd{prefix: "/lbd/"}).parse([]byte("/lbd/im_user"), []byte(doc))
		check("the etcd backend", err)
		d, perr := nodes.ParseDocument([]byte(doc), "")
		if perr != nil {
			t.Fatal(perr)
		}
		_, err = NewMemory(d)
		check("NewMemory", err)
	}
	if _, err := ParseDocuments([]byte(`[{"schema":"a","api.keys":["in side"],"proxy":["10.0.0.1:2883"]}]`)); err != nil {
		t.Errorf("a key with an inner space (a Java client may send it): %v", err)
	}
}
