package remote

import (
	"context"
	"io"
	"log"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

func TestMain(m *testing.M) {
	// Proxies are stopped on purpose; keep go-sql-driver quiet about the broken connections.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	// The per-machine overrides must not leak from the environment into the tests.
	os.Unsetenv(EnvAZ)
	os.Unsetenv(EnvIP)
	testkit.VerifyTestMain(m)
}

// logRecorder keeps every log line, rendered as "LEVEL message k=v ...".
type logRecorder struct{ testkit.Logs }

func (l *logRecorder) logger() *slog.Logger { return l.Logs.Logger() }

func (l *logRecorder) all() []string { return l.Lines() }

// count counts the lines holding every one of parts.
func (l *logRecorder) count(parts ...string) int { return len(l.Containing(parts...)) }

func (l *logRecorder) dump(t testing.TB) {
	t.Helper()
	for _, line := range l.all() {
		t.Log(line)
	}
}

var waitFor = testkit.WaitFor

// updates collects the sets a source pushes.
type updates = nodestest.Updates

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
	set, err := src.Start(context.Background(), u.Push)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return src, u, set
}
