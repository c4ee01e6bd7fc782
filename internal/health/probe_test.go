package health

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/physical"
)

// probeFault arms f on the probe query only.
func probeFault(f mysqlfake.Fault) mysqlfake.Fault {
	f.Match = mysqlfake.QueryContains(ProbeQuery)
	return f
}

// TestProbeRetriesALostConnection: the proxy drops the established probe connection (a reset,
// or a plain close) while the node is healthy; the probe redials at once and passes.
func TestProbeRetriesALostConnection(t *testing.T) {
	for _, action := range []mysqlfake.Action{mysqlfake.Reset, mysqlfake.Close} {
		t.Run(action.String(), func(t *testing.T) {
			srv := mysqlfake.Start(t, mysqlfake.Config{})
			target := newRig(t, "none", srv.Addr()).target(t)
			if err := probeOnce(target, 2*time.Second); err != nil {
				t.Fatalf("first probe: %v", err)
			}
			srv.AddFault(probeFault(mysqlfake.Fault{Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: action, Times: 1}))
			if err := probeOnce(target, 2*time.Second); err != nil {
				t.Fatalf("probe after the probe connection was lost (%v): %v, want it retried on a fresh connection", action, err)
			}
			if got := srv.Accepted(); got != 2 {
				t.Fatalf("server accepted %d connections, want 2 (the first probe connection and its replacement)", got)
			}
		})
	}
}

// TestProbeFailuresThatCount: what is not a lost established connection fails the probe at
// once, with no second connection, and a lost connection is retried once, not more.
func TestProbeFailuresThatCount(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    mysqlfake.Fault
		warm     bool // a first good probe establishes the probe connection before the fault
		accepted int64
		is       error // the probe's error must wrap it, when set
	}{
		{"the fresh connection is lost too", mysqlfake.Fault{Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Reset}, true, 2, nil},
		{"a freshly dialled connection is lost", mysqlfake.Fault{Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Reset}, false, 1, nil},
		{"protocol violation", mysqlfake.Fault{Phase: mysqlfake.PhaseResultHeader, Bytes: mysqlfake.Payload([]byte{0xfe, 1, 0, 0}), Times: 1}, true, 1, physical.ErrProtocol},
		{"no answer within the timeout", mysqlfake.Fault{Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Stall, Times: 1}, true, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mysqlfake.Start(t, mysqlfake.Config{StallTimeout: 5 * time.Second})
			target := newRig(t, "none", srv.Addr()).target(t)
			if tc.warm {
				if err := probeOnce(target, 2*time.Second); err != nil {
					t.Fatalf("first probe: %v", err)
				}
			}
			srv.AddFault(probeFault(tc.fault))
			err := probeOnce(target, 300*time.Millisecond)
			if err == nil {
				t.Fatal("probe passed, want it to fail")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("probe error %v, want one wrapping %v", err, tc.is)
			}
			if got := srv.Accepted(); got != tc.accepted {
				t.Fatalf("server accepted %d connections, want %d (error: %v)", got, tc.accepted, err)
			}
		})
	}
}

// The role check is read from a proxy like any answer: every fault of the catalogue, sent in
// answer to it, ends the probe within its timeout without a panic, and leaves no role behind
// that the proxy did not give (the fake answers as a replica, or as a Galera donor: never a
// primary).
func TestRoleCheckAgainstHostileAnswers(t *testing.T) {
	for _, check := range []struct {
		name, match string
		result      *mysqlfake.Result
	}{
		{"mysql", "@@global.read_only", &mysqlfake.Result{Columns: []string{"@@global.read_only"}, Rows: [][]string{{"1"}}}},
		{"galera", "wsrep_local_state", &mysqlfake.Result{Columns: []string{"Variable_name", "Value"},
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
			t.Run(check.name+"/"+f.Name, func(t *testing.T) {
				t.Parallel()
				srv := mysqlfake.Start(t, mysqlfake.Config{Answer: answer, StallTimeout: 5 * time.Second})
				f.Match = mysqlfake.QueryContains(check.match)
				srv.AddFault(f)
				rg := newRig(t, check.name, srv.Addr())
				target := rg.target(t)
				start := time.Now()
				err := probeOnce(target, time.Second) // a panic here fails the test
				if took := time.Since(start); took > 3*time.Second {
					t.Fatalf("probe took %v against a 1 s timeout (err %v)", took, err)
				}
				// The catalogue's values are 1 and 2, never 0 or a Synced state: no broken
				// answer may pass for a primary.
				if r := rg.table.Role(rg.table.Nodes(nil)[0]); r.String() == "primary" {
					t.Fatalf("a broken answer made the node a primary (err %v)", err)
				}
			})
		}
	}
}
