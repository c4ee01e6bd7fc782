package lbd

import (
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// The role check is read from a proxy like any answer: every fault of the catalogue, sent in
// answer to it, ends the probe within its timeout without a panic, and leaves no role behind
// that the proxy did not give (the fake answers as a replica, or as a Galera donor: never a
// primary).
func TestRoleCheckAgainstHostileAnswers(t *testing.T) {
	for _, check := range []struct {
		param, match string
		result       *mysqlfake.Result
	}{
		{"roleCheck=mysql", "@@global.read_only", &mysqlfake.Result{Columns: []string{"@@global.read_only"}, Rows: [][]string{{"1"}}}},
		{"roleCheck=galera", "wsrep_local_state", &mysqlfake.Result{Columns: []string{"Variable_name", "Value"},
			Rows: [][]string{{"wsrep_ready", "ON"}, {"wsrep_cluster_status", "Primary"}, {"wsrep_local_state", "2"}}}},
	} {
		answer := func(q string) *mysqlfake.Result {
			if strings.Contains(q, check.match) {
				return check.result
			}
			return mysqlfake.DefaultAnswer(q)
		}
		for _, f := range mysqlfake.Catalogue() {
			if f.Phase.Connection() || f.Heavy {
				continue
			}
			t.Run(check.param+"/"+f.Name, func(t *testing.T) {
				t.Parallel()
				srv := mysqlfake.Start(t, mysqlfake.Config{Answer: answer, StallTimeout: 5 * time.Second})
				f.Match = mysqlfake.QueryContains(check.match)
				srv.AddFault(f)
				_, c := openFakeDB(t, []*mysqlfake.Server{srv}, check.param, quiet()...)
				target := &nodeProbe{owner: c, n: at(c.table.Nodes(nil)[0])}
				t.Cleanup(func() { target.Close() })
				start := time.Now()
				err := probeOnce(target, time.Second) // a panic here fails the test
				if took := time.Since(start); took > 3*time.Second {
					t.Fatalf("probe took %v against a 1 s timeout (err %v)", took, err)
				}
				// The catalogue's values are 1 and 2, never 0 or a Synced state: no broken
				// answer may pass for a primary.
				if r := c.table.Role(c.table.Nodes(nil)[0]); r.String() == "primary" {
					t.Fatalf("a broken answer made the node a primary (err %v)", err)
				}
			})
		}
	}
}

// A role check answered with a valid but empty result tells nothing about the role: the node
// keeps the role it had and stays up, RoleError says why, and the probe still passes (the node
// answered its health query). OceanBase's tenant view without the privilege to see the tenant's
// row, or a custom SELECT on an empty table, answer this way on every proxy at once.
func TestRoleCheckAnsweredWithNoRowKeepsTheNodeUp(t *testing.T) {
	answer := func(q string) *mysqlfake.Result {
		if strings.Contains(q, "@@global.read_only") {
			return &mysqlfake.Result{Columns: []string{"@@global.read_only"}}
		}
		return mysqlfake.DefaultAnswer(q)
	}
	srv := mysqlfake.Start(t, mysqlfake.Config{Answer: answer})
	logs := &logRecorder{}
	_, c := openFakeDB(t, []*mysqlfake.Server{srv}, "roleCheck=mysql", fast(50*time.Millisecond, time.Second, time.Hour, logs)...)
	waitFor(t, 10*time.Second, "five probes", func() bool {
		ns, _ := c.Stats().Node(srv.Addr())
		return ns.Probes >= 5
	})
	ns, _ := c.Stats().Node(srv.Addr())
	if ns.State != StateUp || ns.ProbeFailures != 0 {
		t.Fatalf("node %v after %d probes (%d failed); want up, none failed", ns.State, ns.Probes, ns.ProbeFailures)
	}
	if !strings.Contains(ns.RoleError, "no row") {
		t.Fatalf("RoleError = %q; want it to say the check answered no row", ns.RoleError)
	}
	if ns.Role.String() != "unknown" {
		t.Fatalf("role %v; want it left unknown", ns.Role)
	}
}
