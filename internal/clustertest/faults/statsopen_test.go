package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// TestStatsAgreeWithTheProxy: one of two proxies delays every statement by a second; the
// application's statements there carry a 50 ms deadline, and its probes (every 300 ms, 100 ms
// timeout) fail, so it goes down and is probed on the recovery schedule, each probe on a new
// connection. From then on what Stats counts (Open, plus the probe's own connections,
// ProbeConns) is what the proxy holds open from lbd once the proxy has noticed the closes: no
// connection of lbd's stays open that Stats does not show.
func TestStatsAgreeWithTheProxy(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	db, c := clusterkit.OpenDB(t, cl, "", lbd.WithCheckHealthInterval(300*time.Millisecond), lbd.WithCheckHealthTimeout(100*time.Millisecond),
		lbd.WithCheckBalanceInterval(time.Hour), lbd.WithRand(func(int) int { return 0 }))
	conn, err := db.Conn(context.Background()) // on the first proxy
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	slow := cl.Proxy(0)
	slow.SetLatency(time.Second)
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		var v int
		_ = conn.QueryRowContext(ctx, "SELECT 2").Scan(&v)
		cancel()
	}
	testkit.WaitFor(t, 5*time.Second, "the slow proxy down", func() bool {
		ns, _ := c.Stats().Node(slow.Addr())
		return ns.State == lbd.StateDown
	})
	// The proxy notices a close only once the statement it is delaying is done, so its own
	// count lags by a second of probes; what lbd holds is read from the kernel instead: the
	// established sockets whose far end is the proxy.
	counted := func() int {
		ns, _ := c.Stats().Node(slow.Addr())
		return ns.Open + ns.ProbeConns
	}
	// Sampled for three seconds of probes on the recovery schedule. A connection is counted
	// from its dial to its close, so the sockets are read between two readings of Stats and
	// should match one of them; a sample that does not is looked at again for 50 ms
	// (a socket's state may trail its close by a scheduling delay on a busy machine), and
	// only a difference that lasts is a defect.
	agrees := func() (bool, string) {
		before := counted()
		held := establishedTo(t, slow.Addr())
		after := counted()
		return held == before || held == after, fmt.Sprintf("Stats counted %d then %d connections to the slow proxy, %d sockets established to it between the two", before, after, held)
	}
	misses, samples := 0, 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		samples++
		ok, what := agrees()
		if ok {
			continue
		}
		misses++
		for again := time.Now().Add(50 * time.Millisecond); !ok && time.Now().Before(again); time.Sleep(10 * time.Millisecond) {
			ok, _ = agrees()
		}
		if !ok {
			t.Fatalf("for 50 ms: %s", what)
		}
	}
	t.Logf("%d samples, %d differed for a moment", samples, misses)
}

// establishedTo counts this machine's established TCP sockets whose far end is addr (an
// IPv4 "host:port"), from /proc/net/tcp; the test is skipped where there is none.
func establishedTo(t *testing.T, addr string) int {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(host).To4()
	p, _ := strconv.Atoi(port)
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], p)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp to count sockets: %v", err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == want && f[3] == "01" { // rem_address, st (01: ESTABLISHED)
			n++
		}
	}
	return n
}
