package configserver

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine outlives the tests: every Server, backend and
// prober must stop in Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestCloseLeavesNoGoroutine checks each backend, with the prober running, right after Close.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.json")
		writeFile(t, path, `[{"schema":"a","proxy":["127.0.0.1:1"]}]`)
		ignore := goleak.IgnoreCurrent()
		fb, err := NewFile(FileConfig{Path: path, PollInterval: 10 * time.Millisecond, Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		runAndClose(t, fb)
		goleak.VerifyNone(t, ignore)
	})
	t.Run("etcd", func(t *testing.T) {
		te := startEtcd(t)
		te.put(keyA, `{"schema":"app_a","proxy":["127.0.0.1:1"]}`)
		ignore := goleak.IgnoreCurrent()
		be, _, _ := te.backend(t, func(c *EtcdConfig) { c.Logger = discard(); c.RefreshInterval = 10 * time.Millisecond })
		runAndClose(t, be)
		goleak.VerifyNone(t, ignore)
	})
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// runAndClose starts a Server with a fast prober, uses it a little and closes it.
func runAndClose(t *testing.T, b Backend) {
	t.Helper()
	s, err := New(context.Background(), Config{Backend: b, Logger: discard(), ProbeInterval: 10 * time.Millisecond, ReloadInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The loops run for a while so that Close finds them mid-work: the wait ends once the
	// prober has finished two rounds over the served proxy (its second probe has a later
	// time), so its loop has cycled. The verdict is the leak check after Close.
	probed := func() (probeResult, bool) { return s.prober.result("127.0.0.1:1") }
	eventually(t, 5*time.Second, "the prober's first round", func() bool { _, ok := probed(); return ok })
	first, _ := probed()
	eventually(t, 5*time.Second, "the prober's second round", func() bool { r, _ := probed(); return r.at.After(first.at) })
	for range 3 {
		if rec := serve(s.AdminHandler(), http.MethodPost, "/reload", "127.0.0.1:1"); rec.Body.String() != `{"code":200}` {
			t.Errorf("/reload: %s", rec.Body)
		}
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
