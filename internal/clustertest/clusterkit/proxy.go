package clusterkit

import (
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// ClosedConns is how many client connections through p have closed. A fatal error brings the
// node's probe forward, and the probe's own connection goes through the proxy too, so the
// proxy's open count alone does not show that the application's connection closed.
func ClosedConns(p *lbdtest.Proxy) int64 { return p.TotalConns() - int64(p.OpenConns()) }

// WaitForClose waits until exactly one more connection through p has closed than before, and
// checks a moment later that no other one did.
func WaitForClose(t testing.TB, p *lbdtest.Proxy, before int64) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, "the retired connection to close", func() bool { return ClosedConns(p) == before+1 })
	time.Sleep(20 * time.Millisecond)
	if got := ClosedConns(p); got != before+1 {
		t.Fatalf("%d connections closed through the proxy, want 1", got-before)
	}
}

// ProxyThatSaw returns the index of the one proxy of cl that recorded the statement text, and
// fails t unless exactly one did.
func ProxyThatSaw(t testing.TB, cl *lbdtest.Cluster, text string) int {
	t.Helper()
	at, seen := -1, 0
	for i, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			if q == text {
				at = i
				seen++
				break
			}
		}
	}
	if seen != 1 {
		t.Fatalf("%d proxies recorded %q, want exactly 1", seen, text)
	}
	return at
}
