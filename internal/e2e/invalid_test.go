package e2e

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestInvalidDocuments is lb-driver's scenarios 20 to 22: a document that is not JSON, one
// with a single proxy entry that is not host:port, and one whose entries are all wrong are
// each rejected whole by the config-server; the last good list stays served and applied and
// the traffic does not notice. A valid document afterwards is followed.
func TestInvalidDocuments(t *testing.T) {
	r := newRig(t, 3, 1)
	p := r.p
	cs := r.cs[0]
	a := r.mustOpenApp(t, r.servers(), t.TempDir())
	a.expectNodes(t, "start", p[0], p[1])
	w := startWorkload(t, a.db)
	testkit.WaitFor(t, settleWithin, "p0 and p1 to hold connections", func() bool { return a.serving(p[0]) && a.serving(p[1]) })
	w.Progress(t, settleWithin, 100)

	goodList := slices.Sorted(slices.Values(p[:2]))
	reject := func(what, value string, reason ...string) {
		t.Helper()
		before := len(cs.logs.find(slog.LevelError, "document rejected"))
		r.etcd.put(schemaKey, value)
		testkit.WaitFor(t, settleWithin, "the config-server to reject "+what, func() bool {
			return len(cs.logs.find(slog.LevelError, "document rejected")) > before
		})
		if l := cs.logs.find(slog.LevelError, append([]string{"document rejected", schemaKey, "previous document"}, reason...)...); len(l) == 0 {
			t.Errorf("%s: no rejection line names the key, the reason %q and the document kept; lines: %q", what, reason, cs.logs.find(slog.LevelError, "document rejected"))
		}
		if code, list := cs.served(t); code != 200 || !slices.Equal(list, goodList) {
			t.Fatalf("%s: the config-server answers code %d, list %v; want the last good list %v", what, code, list, goodList)
		}
		cs.waitPolls(t, 5)
		w.Progress(t, settleWithin, 50)
		w.ExpectNoErrors(t, what)
		a.expectNodes(t, what, p[0], p[1])
	}

	// Scenario 20: not JSON. A config-server restart fails (lb-driver's too); an application
	// restart does not.
	reject("a document that is not JSON", `{"schema":"`+schema+`","proxy":["`+p[0]+`","`+p[2]+`"]`, "not valid JSON")
	if err := tryConfigServer(t, r.etcd.endpoint); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("config-server restart over a document that is not JSON: %v, want a failure naming it", err)
	}
	b := r.mustOpenApp(t, r.servers(), t.TempDir())
	b.expectNodes(t, "application restarted while etcd holds invalid JSON", p[0], p[1])
	b.run(t, 20)

	// Scenario 21: one entry without a port. The whole document is rejected: p2 must not join.
	reject("a document with one entry that is not host:port", document(p[0], p[1], p[2], "127.0.0.1"), `"127.0.0.1"`, "host:port")
	if !a.gone(p[2]) {
		t.Errorf("p2, listed only in the rejected document, reached the Connector: %+v", a.conn.Stats().Nodes)
	}

	// Scenario 22: every entry wrong.
	reject("a document whose entries are all wrong", document("proxy-a", "proxy-b"), "proxy-a")

	// A valid document again: followed.
	r.setProxies(p[0], p[2])
	testkit.WaitFor(t, settleWithin, "p2 to be up and hold connections", func() bool { return a.serving(p[2]) })
	testkit.WaitFor(t, settleWithin, "p1 to leave Stats and hold no connection on the proxy", func() bool {
		return a.gone(p[1]) && r.cluster.Proxy(1).OpenConns() == 0
	})
	w.Progress(t, settleWithin, 100)
	w.Stop()
	w.ExpectNoErrors(t, "whole run")
	a.expectNodes(t, "end", p[0], p[2])
}
