package lbd

import (
	"github.com/lbd-go/lbd/internal/testkit"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// TestDownNodeIsBackWithinASecond: at the default 5 s probe interval, a node taken down by
// fatal errors is probed on the recovery schedule while down, so it is up again about half a
// second after its proxy answers again, not after probe intervals; meanwhile it keeps failing
// and stays down.
func TestDownNodeIsBackWithinASecond(t *testing.T) {
	var broken atomic.Bool
	answer := func(q string) *mysqlfake.Result {
		if broken.Load() {
			return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1040, State: "08004", Message: "Too many connections"}}
		}
		return mysqlfake.DefaultAnswer(q)
	}
	srvs := []*mysqlfake.Server{mysqlfake.Start(t, mysqlfake.Config{Answer: answer}), mysqlfake.Start(t, mysqlfake.Config{})}
	db, c := openFakeDB(t, srvs, "", firstListed(), WithCheckBalanceInterval(time.Hour))
	conn := testkit.HoldConns(t, db, 1)[0] // on the first listed node
	defer conn.Close()
	broken.Store(true)
	for range 3 {
		conn.ExecContext(t.Context(), "SELECT 1") // 1040 is fatal: three take the node down
	}
	addr := srvs[0].Addr()
	waitFor(t, 2*time.Second, "the markdown", func() bool { s, _ := nodeState(c, addr); return s == StateDown })
	// Still broken: it stays down across recovery probes.
	probes := func() uint64 { ns, _ := c.Stats().Node(addr); return ns.Probes }
	before := probes()
	waitFor(t, 5*time.Second, "two recovery probes", func() bool { return probes() >= before+2 })
	if s, _ := nodeState(c, addr); s != StateDown {
		t.Fatalf("a node whose probes fail is %v, want down", s)
	}
	fixed := time.Now()
	broken.Store(false)
	waitFor(t, 5*time.Second, "the recovery", func() bool { s, _ := nodeState(c, addr); return s == StateUp })
	took := time.Since(fixed)
	t.Logf("back up %v after the proxy answered again (probe interval %v)", took.Round(time.Millisecond), c.cfg.CheckHealthInterval)
	if took > 1500*time.Millisecond {
		t.Errorf("back up %v after the proxy answered again, want about a second at most", took)
	}
}
