package lbd

import (
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

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
