package clusterkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// Closes counts the connections through one proxy that have closed, as the proxy saw them and
// as lbd counts its own.
type Closes struct {
	Proxy int64 // client connections through the proxy that have closed, probe connections too
	LBD   int64 // lbd's connections to the node that are gone: successful dials less those open
}

// ClosedConns counts the closes through p, whose node c balances over. A fatal error brings the
// node's probe forward, and the probe's own connection goes through the proxy too, so the
// proxy's open count alone does not show that the application's connection closed.
func ClosedConns(c *lbd.Connector, p *lbdtest.Proxy) Closes {
	cl := Closes{Proxy: p.TotalConns() - int64(p.OpenConns())}
	if ns, ok := c.Stats().Node(p.Addr()); ok {
		cl.LBD = int64(ns.Dials) - int64(ns.Open)
	}
	return cl
}

// WaitForClose waits until lbd has closed a connection to p's node since before and the proxy
// has seen every connection lbd closed, then checks that exactly one closed, on both counts:
// the proxy catching up with lbd's own count is the event that ends the wait, so a second
// close lbd made cannot slip by unseen.
func WaitForClose(t testing.TB, c *lbd.Connector, p *lbdtest.Proxy, before Closes) {
	t.Helper()
	var now Closes
	testkit.WaitForState(t, 5*time.Second, "the retired connection to close", func() (bool, string) {
		now = ClosedConns(c, p)
		lbdClosed, proxyClosed := now.LBD-before.LBD, now.Proxy-before.Proxy
		return lbdClosed >= 1 && proxyClosed >= lbdClosed,
			fmt.Sprintf("lbd closed %d, the proxy saw %d close", lbdClosed, proxyClosed)
	})
	if lbdClosed, proxyClosed := now.LBD-before.LBD, now.Proxy-before.Proxy; lbdClosed != 1 || proxyClosed != 1 {
		t.Fatalf("lbd closed %d connections and the proxy saw %d close, want 1 and 1", lbdClosed, proxyClosed)
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
