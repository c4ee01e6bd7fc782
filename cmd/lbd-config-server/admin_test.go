package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testToken = "0123456789abcdef-test-token"

// writeDocs writes a documents file with an open and a protected schema.
func writeDocs(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schemas.json")
	os.WriteFile(path, []byte(`[{"schema":"app","proxy":["127.0.0.1:2883"]},
{"schema":"locked","auth.enable":true,"api.keys":["k1"],"proxy":["127.0.0.9:2883"]}]`), 0o600)
	return path
}

// call sends one request and returns its status and body.
func call(t *testing.T, method, u string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminDefaults(t *testing.T) {
	c := defaults()
	host, _, err := net.SplitHostPort(c.AdminListen)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Errorf("default admin address %q is not loopback", c.AdminListen)
	}
	if c.Listen != ":8080" {
		t.Errorf("default listen address %q", c.Listen)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatal(err)
	}
	for _, want := range []string{`(default ":8080")`, `(default "127.0.0.1:8081")`, "every interface", "loopback only", "adminTokenFile", adminTokenEnv} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("-h does not say %q", want)
		}
	}
}

func TestRunAdminListener(t *testing.T) {
	var logs syncBuffer
	base, admin := serveFor(t, []string{"-backend", "file", "-file", writeDocs(t), "-listen", "127.0.0.1:0", "-probe-interval", "0"}, &logs)
	if admin == "" || admin == base {
		t.Fatalf("admin listener %q, public %q", admin, base)
	}
	// The clients' address serves no admin endpoint, on any method.
	for _, path := range []string{"/monitor", "/reload", "/health/offline", "/health/online"} {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			if code, body := call(t, method, base+path); code != http.StatusNotFound || !strings.Contains(body, "admin address") {
				t.Errorf("public %s %s: %d %s", method, path, code, body)
			}
		}
	}
	// The admin address: listing without protected schemas, POST-only state changes.
	code, body := call(t, http.MethodGet, admin+"/monitor")
	if code != 200 || !strings.Contains(body, `"schema":"app"`) || strings.Contains(body, "locked") || strings.Contains(body, "127.0.0.9") {
		t.Errorf("admin /monitor: %d %s", code, body)
	}
	if code, _ := call(t, http.MethodGet, admin+"/health/offline"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /health/offline: %d", code)
	}
	if code, _ := call(t, http.MethodPost, admin+"/health/offline", "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin POST /health/offline: %d", code)
	}
	if code, _ := call(t, http.MethodGet, base+"/health/status"); code != 200 {
		t.Fatalf("a refused request took the server offline: %d", code)
	}
	if code, body := call(t, http.MethodPost, admin+"/reload"); code != 200 || body != `{"code":200}` {
		t.Errorf("POST /reload: %d %s", code, body)
	}
	// 500: the requests above are traffic within the drain window; offline all the same.
	if code, body := call(t, http.MethodPost, admin+"/health/offline"); code != 500 || !strings.Contains(body, "still arriving") {
		t.Errorf("POST /health/offline: %d %s", code, body)
	}
	if code, _ := call(t, http.MethodGet, base+"/health/status"); code != 500 {
		t.Errorf("status after offline: %d", code)
	}
	if code, _ := call(t, http.MethodPost, admin+"/health/online"); code != 200 {
		t.Errorf("POST /health/online: %d", code)
	}
	if !strings.Contains(logs.String(), "adminAddr=127.0.0.1:") {
		t.Errorf("the admin address is not logged:\n%s", logs.String())
	}
}

func TestRunWithoutAdminListener(t *testing.T) {
	base, admin := serveFor(t, []string{"-backend", "file", "-file", writeDocs(t), "-listen", "127.0.0.1:0", "-admin-listen", "", "-probe-interval", "0"}, io.Discard)
	if admin != "" {
		t.Fatalf("admin listener %s", admin)
	}
	if code, _ := call(t, http.MethodGet, base+"/monitor"); code != http.StatusNotFound {
		t.Errorf("public /monitor: %d", code)
	}
}

func TestAdminTokenOffLoopback(t *testing.T) {
	docs := writeDocs(t)
	args := []string{"-backend", "file", "-file", docs, "-listen", "127.0.0.1:0", "-admin-listen", "0.0.0.0:0", "-probe-interval", "0"}
	t.Setenv(adminTokenEnv, "")
	err := run(context.Background(), args, io.Discard, func(_, _ net.Addr) { t.Error("started without a token off loopback") })
	if err == nil || !strings.Contains(err.Error(), "not loopback") || !strings.Contains(err.Error(), "admin token") {
		t.Fatalf("off loopback without a token: %v", err)
	}

	for _, source := range []string{"env", "file"} {
		t.Run(source, func(t *testing.T) {
			a := args
			if source == "env" {
				t.Setenv(adminTokenEnv, testToken)
			} else {
				tf := filepath.Join(t.TempDir(), "token")
				os.WriteFile(tf, []byte(testToken+"\n"), 0o600)
				a = append(a, "-admin-token-file", tf)
			}
			var logs syncBuffer
			_, admin := serveFor(t, a, &logs)
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(admin, "http://"))
			admin = "http://127.0.0.1:" + port
			if code, _ := call(t, http.MethodGet, admin+"/monitor"); code != http.StatusUnauthorized {
				t.Errorf("/monitor without the token: %d", code)
			}
			if code, _ := call(t, http.MethodPost, admin+"/health/offline", "Authorization", "Bearer wrong-wrong-wrong-wrong"); code != http.StatusUnauthorized {
				t.Errorf("offline with a wrong token: %d", code)
			}
			code, body := call(t, http.MethodGet, admin+"/monitor", "Authorization", "Bearer "+testToken)
			if code != 200 || !strings.Contains(body, `"schema":"locked"`) {
				t.Errorf("/monitor with the token: %d %s", code, body)
			}
			if strings.Contains(logs.String(), testToken) {
				t.Errorf("the token was logged:\n%s", logs.String())
			}
		})
	}
}

func TestAdminTokenErrors(t *testing.T) {
	docs := writeDocs(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc123"), 0o600)
	base := []string{"-backend", "file", "-file", docs, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-probe-interval", "0"}
	t.Setenv(adminTokenEnv, "")
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"-admin-token-file", filepath.Join(dir, "missing")}, "admin token file"},
		{[]string{"-admin-token-file", empty}, "is empty"},
		{[]string{"-admin-token-file", short}, "at least 16"},
		{[]string{"-admin-token-file", short, "-admin-listen", ""}, "-admin-listen is empty"},
	} {
		err := run(context.Background(), append(base, c.extra...), io.Discard, func(_, _ net.Addr) { t.Errorf("%q started", c.extra) })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.extra, err, c.want)
		} else if strings.Contains(err.Error(), "abc123") {
			t.Errorf("the error shows the token: %v", err)
		}
	}
}
