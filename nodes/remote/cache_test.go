package remote

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/lbd-go/lbd/internal/remotefake"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// cacheFiles lists the files in dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestCacheFile(t *testing.T) {
	const key = "cache-key-never-stored"
	cs := remotefake.New(t)
	cs.SetKey(key)
	cs.SetList("im_user", "10.0.0.1:2883", "10.0.0.2:2883")
	dir := filepath.Join(t.TempDir(), "made", "here")
	_, u, _ := startSource(t, Config{
		Servers: []string{cs.Addr()}, Schema: "im_user", APIKey: key, CacheDir: dir,
		PollInterval: 5 * time.Millisecond,
	}, nil)

	files := cacheFiles(t, dir)
	if len(files) != 1 || !strings.HasPrefix(files[0], "remote-") || !strings.HasSuffix(files[0], ".json") {
		t.Fatalf("cache dir holds %v, want one remote-*.json", files)
	}
	path := filepath.Join(dir, files[0])
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir mode %v, %v; want 0700", fi.Mode().Perm(), err)
	}
	read := func() cacheFile {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), key) || strings.Contains(files[0], key) {
			t.Fatalf("the cache holds the API key:\n%s", data)
		}
		var cf cacheFile
		if err := json.Unmarshal(data, &cf); err != nil {
			t.Fatalf("cache file is not JSON: %v\n%s", err, data)
		}
		return cf
	}
	cf := read()
	want := []string{"10.0.0.1:2883", "10.0.0.2:2883"}
	if cf.Schema != "im_user" || !slices.Equal(cf.Nodes, want) || cf.MD5 != nodes.ListMD5(want) || cf.SavedAt.IsZero() {
		t.Fatalf("cache content %+v", cf)
	}

	// A change rewrites the same file, leaving no temporary file behind.
	next := []string{"10.0.0.3:2883"}
	cs.SetList("im_user", next...)
	waitFor(t, 5*time.Second, "the change", func() bool { return u.Len() == 1 })
	if cf := read(); !slices.Equal(cf.Nodes, next) || cf.MD5 != nodes.ListMD5(next) {
		t.Fatalf("cache not updated: %+v", cf)
	}
	if files := cacheFiles(t, dir); len(files) != 1 {
		t.Fatalf("cache dir holds %v after a rewrite, want the one file", files)
	}
}

// One file per (config-server list, schema, AZ): another AZ or schema does not see it, and the
// same servers in another order do.
func TestCacheFileNames(t *testing.T) {
	a := newDiskCache("d", "s", []server{{base: "http://a:1"}, {base: "http://b:1"}})
	b := newDiskCache("d", "s", []server{{base: "http://b:1"}, {base: "http://a:1"}})
	other := newDiskCache("d", "s2", []server{{base: "http://a:1"}, {base: "http://b:1"}})
	fewer := newDiskCache("d", "s", []server{{base: "http://a:1"}})
	if a.path("az=") != b.path("az=") {
		t.Error("the same servers in another order use another file")
	}
	for _, p := range []string{a.path("az=az1;ip="), a.path("policy=default"), other.path("az="), fewer.path("az=")} {
		if p == a.path("az=") {
			t.Errorf("%s shared by different sets", p)
		}
	}
}

// Scenario 13: every config-server is down at start-up. With a cache from an earlier run the
// source starts from it and says so; without one Start fails naming each server.
func TestStartWhileEveryServerIsDown(t *testing.T) {
	const key = "k-top-secret"
	dir := t.TempDir()
	cs := remotefake.New(t)
	cs.SetList("im_user", "10.0.0.1:2883", "10.0.0.2:2883")
	cs.SetKey(key)
	dead := remotefake.DeadAddr(t)
	cfg := Config{Servers: []string{dead, cs.Addr()}, Schema: "im_user", APIKey: key, CacheDir: dir, AZ: "az1"}
	src, _, first := startSource(t, cfg, nil)
	src.Close()
	cs.Close()

	logs := &logRecorder{}
	cfg.Logger = logs.logger()
	src, _, set := startSource(t, cfg, nil)
	src.Close()
	if !slices.Equal(set.Addrs(), first.Addrs()) || set.Version != first.Version {
		t.Fatalf("started from %v (%s), want the cached %v (%s)", set.Addrs(), set.Version, first.Addrs(), first.Version)
	}
	if n := logs.count("WARN", "starting from the node list cached by an earlier run", dead, cs.Addr()); n != 1 {
		logs.dump(t)
		t.Fatalf("%d warnings about starting from the cache, want 1", n)
	}

	for name, c := range map[string]Config{
		"no cache":     {Servers: cfg.Servers, Schema: "im_user", APIKey: key, CacheDir: t.TempDir()},
		"cache off":    {Servers: cfg.Servers, Schema: "im_user", APIKey: key, DisableCache: true},
		"another AZ":   {Servers: cfg.Servers, Schema: "im_user", APIKey: key, CacheDir: dir, AZ: "az2"},
		"another list": {Servers: cfg.Servers[:1], Schema: "im_user", APIKey: key, CacheDir: dir, AZ: "az1"},
	} {
		t.Run(name, func(t *testing.T) {
			src, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			_, err = src.Start(context.Background(), func(nodes.Set) {})
			if err == nil {
				t.Fatal("Start succeeded without a config-server or cache")
			}
			for _, s := range c.Servers {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("the error does not name %s: %v", s, err)
				}
			}
			if !errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), key) {
				t.Errorf("error %v: want ErrUnreachable, without the key", err)
			}
		})
	}
}

// A refused API key or an unknown schema is a configuration mistake that the cache must not
// hide.
func TestCacheDoesNotHideConfigurationMistakes(t *testing.T) {
	dir := t.TempDir()
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	cfg := Config{Servers: []string{cs.Addr()}, Schema: "s", APIKey: "k", CacheDir: dir}
	src, _, _ := startSource(t, cfg, nil)
	src.Close()

	cs.SetKey("another")
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Start(context.Background(), func(nodes.Set) {}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("Start = %v, want ErrForbidden", err)
	}
	cs.SetKey("")
	cs.DropSchema("s")
	src, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Start(context.Background(), func(nodes.Set) {}); !errors.Is(err, ErrUnknownSchema) {
		t.Fatalf("Start = %v, want ErrUnknownSchema", err)
	}
}

func TestCorruptCacheIsIgnored(t *testing.T) {
	dir := t.TempDir()
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	cfg := Config{Servers: []string{cs.Addr()}, Schema: "s", CacheDir: dir}
	src, _, _ := startSource(t, cfg, nil)
	src.Close()
	cs.Close()
	files := cacheFiles(t, dir)
	for _, bad := range []string{"{not json", `{"schema":"s","variant":"az=;ip=","md5":"x","nodes":[]}`,
		`{"schema":"other","variant":"az=;ip=","md5":"x","nodes":["10.0.0.1:1"]}`,
		`{"schema":"s","variant":"az=;ip=","md5":"x","nodes":["10.0.0.1"]}`} {
		if err := os.WriteFile(filepath.Join(dir, files[0]), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		logs := &logRecorder{}
		c := cfg
		c.Logger = logs.logger()
		src, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		_, err = src.Start(context.Background(), func(nodes.Set) {})
		src.Close()
		if err == nil || !strings.Contains(err.Error(), "unusable") {
			t.Errorf("cache %s: Start = %v, want an error about the unusable cache", bad, err)
		}
		if logs.count("WARN", "ignoring a corrupt") != 1 {
			logs.dump(t)
			t.Errorf("cache %s: no warning", bad)
		}
	}
}

func TestDefaultCacheDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("HOME", home)
	want, err := DefaultCacheDir()
	if err != nil {
		t.Skipf("no user cache directory here: %v", err)
	}
	if !strings.HasPrefix(want, home) || filepath.Base(want) != "lbd" {
		t.Fatalf("DefaultCacheDir = %q, want lbd under %s", want, home)
	}
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	src, _, _ := startSource(t, Config{Servers: []string{cs.Addr()}, Schema: "s"}, nil)
	src.Close()
	if files := cacheFiles(t, want); len(files) != 1 {
		t.Fatalf("default cache dir holds %v", files)
	}
}

// seedCache runs a source once against a live config-server, so that dir holds the cache
// file of cfg, and returns that file's path; the config-server is then shut down.
func seedCache(t *testing.T, cfg Config) (string, Config) {
	t.Helper()
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	cfg.Servers, cfg.Schema = []string{cs.Addr()}, "s"
	src, _, _ := startSource(t, cfg, nil)
	src.Close()
	cs.Close()
	files := cacheFiles(t, cfg.CacheDir)
	if len(files) != 1 {
		t.Fatalf("cache dir holds %v", files)
	}
	return filepath.Join(cfg.CacheDir, files[0]), cfg
}

// startExpectingNoCache starts a source whose config-servers are down and checks that it
// refuses its cache: Start fails with an error containing want, and one warning containing
// logWant is logged.
func startExpectingNoCache(t *testing.T, cfg Config, want, logWant string) {
	t.Helper()
	logs := &logRecorder{}
	cfg.Logger = logs.logger()
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start = %v, %v; want an error containing %q", set.Addrs(), err, want)
	}
	if n := logs.count("WARN", logWant); n != 1 {
		logs.dump(t)
		t.Fatalf("%d warnings containing %q, want 1", n, logWant)
	}
}

// A cache that others can write is not trusted, as ssh refuses a key file others can read:
// neither a loose directory nor a loose file is read, and the error says what mode to set.
func TestLooseCacheIsRefused(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "c")
		path, cfg := seedCache(t, Config{CacheDir: dir})
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		startExpectingNoCache(t, cfg, "chmod go-w "+dir, dir)
		_ = path
	})
	t.Run("file", func(t *testing.T) {
		path, cfg := seedCache(t, Config{CacheDir: t.TempDir()})
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		startExpectingNoCache(t, cfg, "chmod 600 "+path, path)
	})
	t.Run("symbolic link", func(t *testing.T) {
		path, cfg := seedCache(t, Config{CacheDir: t.TempDir()})
		planted := filepath.Join(t.TempDir(), "planted.json")
		if err := os.Rename(path, planted); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(planted, path); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
		startExpectingNoCache(t, cfg, "symbolic link", path)
	})
}

// Nothing is written into a directory others can write.
func TestLooseCacheIsNotWritten(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	logs := &logRecorder{}
	startSource(t, Config{Servers: []string{cs.Addr()}, Schema: "s", CacheDir: dir, Logger: logs.logger()}, nil)
	if files := cacheFiles(t, dir); len(files) != 0 {
		t.Fatalf("wrote %v into a group-writable directory", files)
	}
	if n := logs.count("WARN", "cannot write", "chmod go-w "+dir); n != 1 {
		logs.dump(t)
		t.Fatalf("%d warnings about the loose directory, want 1", n)
	}
}

// A cache file is bound to the schema and the config-servers it came from, and holds an md5
// fit to send: a file naming another set, or with a bad md5, is ignored with one warning.
func TestMismatchedCacheIsIgnored(t *testing.T) {
	path, cfg := seedCache(t, Config{CacheDir: t.TempDir()})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cf cacheFile
	if err := json.Unmarshal(data, &cf); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*cacheFile){
		"other servers": func(cf *cacheFile) { cf.Servers = []string{"http://elsewhere.example:8080"} },
		"more servers":  func(cf *cacheFile) { cf.Servers = append(cf.Servers, "http://elsewhere.example:8080") },
		"no servers":    func(cf *cacheFile) { cf.Servers = nil },
		"other schema":  func(cf *cacheFile) { cf.Schema = "other" },
		"huge md5":      func(cf *cacheFile) { cf.MD5 = strings.Repeat("a", 1<<20) },
		"bad md5":       func(cf *cacheFile) { cf.MD5 = "not-an-md5" },
		"duplicate":     func(cf *cacheFile) { cf.Nodes = []string{"LOCALHOST:1", "localhost:1"} },
	} {
		t.Run(name, func(t *testing.T) {
			c := cf
			edit(&c)
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			startExpectingNoCache(t, cfg, "unusable", "ignoring")
		})
	}
}

// A cached list is handed on in canonical form, the spelling the Connector knows its nodes by.
func TestCachedListIsCanonical(t *testing.T) {
	path, cfg := seedCache(t, Config{CacheDir: t.TempDir()})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), `"10.0.0.1:1"`, `"[::ffff:10.0.0.1]:01", "DB.Example:2"`, 1))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, set := startSource(t, cfg, nil)
	if got, want := set.Addrs(), []string{"10.0.0.1:1", "db.example:2"}; !slices.Equal(got, want) {
		t.Fatalf("started from %v, want %v", got, want)
	}
}
