package remotetest

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
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

// failLine is the log line of a poll round that no config-server answered usably.
const failLine = "no config-server gave a usable node list"

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

// startFromCache closes every config-server (hs) and starts a new source of cfg, which must
// start from its cache; it returns the set it started with and closes the source when the test
// ends.
func startFromCache(t *testing.T, cfg remote.Config, hs *httptest.Server) nodes.Set {
	t.Helper()
	hs.Close()
	src, err := remote.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if err != nil {
		t.Fatal(err)
	}
	return set
}
