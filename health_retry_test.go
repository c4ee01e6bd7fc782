package lbd

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// probeOnce runs one probe of target within timeout.
func probeOnce(target *nodeProbe, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return target.Probe(ctx)
}

// newNodeProbe returns a probe target for the only node of a Connector over srv whose own
// loops stay quiet, so the test alone drives the probes; it is closed when the test ends.
func newNodeProbe(t *testing.T, srv *mysqlfake.Server) *nodeProbe {
	t.Helper()
	_, c := openFakeDB(t, []*mysqlfake.Server{srv}, "", quiet()...)
	target := &nodeProbe{owner: c, n: at(c.table.Nodes(nil)[0])}
	t.Cleanup(func() { target.Close() })
	return target
}

// probeFault arms f on the probe query only.
func probeFault(f mysqlfake.Fault) mysqlfake.Fault {
	f.Match = mysqlfake.QueryContains(probeQuery)
	return f
}

// TestProbeRetriesALostConnection: the proxy drops the established probe connection (a reset,
// or a plain close) while the node is healthy; the probe redials at once and passes.
func TestProbeRetriesALostConnection(t *testing.T) {
	for _, action := range []mysqlfake.Action{mysqlfake.Reset, mysqlfake.Close} {
		t.Run(action.String(), func(t *testing.T) {
			srv := mysqlfake.Start(t, mysqlfake.Config{})
			target := newNodeProbe(t, srv)
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
		{"protocol violation", mysqlfake.Fault{Phase: mysqlfake.PhaseResultHeader, Bytes: mysqlfake.Payload([]byte{0xfe, 1, 0, 0}), Times: 1}, true, 1, ErrProtocol},
		{"no answer within the timeout", mysqlfake.Fault{Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Stall, Times: 1}, true, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mysqlfake.Start(t, mysqlfake.Config{StallTimeout: 5 * time.Second})
			target := newNodeProbe(t, srv)
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

// TestProbeConnectionResetKeepsTheNodeUp reproduces a healthy proxy taken out by one reset of
// its probe connection: the Connector's own prober must see the node stay up.
func TestProbeConnectionResetKeepsTheNodeUp(t *testing.T) {
	srvs := startFakes(t, 2, mysqlfake.Config{})
	_, c := openFakeDB(t, srvs, "", fast(20*time.Millisecond, time.Second, time.Hour, &logRecorder{})...)
	addr := srvs[0].Addr()
	probes := func() uint64 { ns, _ := c.Stats().Node(addr); return ns.Probes }
	waitFor(t, 5*time.Second, "a probe connection to be established", func() bool { return probes() >= 1 })
	spent := make(chan struct{})
	srvs[0].AddFault(probeFault(mysqlfake.Fault{Phase: mysqlfake.PhaseCommand, Bytes: func([]byte) []byte {
		close(spent)
		return nil
	}, After: mysqlfake.Reset, Times: 1}))
	<-spent
	after := probes()
	waitFor(t, 5*time.Second, "two more probes", func() bool { return probes() >= after+2 })
	ns, _ := c.Stats().Node(addr)
	if ns.State != StateUp || ns.Transitions != 0 || ns.ProbeFailures != 0 {
		t.Fatalf("after one reset of the probe connection: state %v, %d transitions, %d failed probes (%s); want up, 0, 0",
			ns.State, ns.Transitions, ns.ProbeFailures, ns.LastError)
	}
}
