package lbd

import (
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// probeFault arms f on the probe query only.
func probeFault(f mysqlfake.Fault) mysqlfake.Fault {
	f.Match = mysqlfake.QueryContains(health.ProbeQuery)
	return f
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
