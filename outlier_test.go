package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/physical"
)

func TestPassiveSignal(t *testing.T) {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		name string
		err  error
		want string // a word the signal must hold; "" for no signal
	}{
		{"nil", nil, ""},
		{"duplicate key", &mysql.MySQLError{Number: 1062, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Duplicate entry"}, ""},
		{"syntax error", &mysql.MySQLError{Number: 1064, Message: "You have an error in your SQL syntax"}, ""},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, ""},
		{"server error wrapped", fmt.Errorf("exec: %w", &mysql.MySQLError{Number: 1146}), ""},
		{"server shutdown (08S01) is an answer", &mysql.MySQLError{Number: 1053, SQLState: [5]byte{'0', '8', 'S', '0', '1'}}, ""},
		{"the caller cancelled", context.Canceled, ""},
		{"ErrSkip", driver.ErrSkip, ""},
		{"ErrBadConn: nothing was sent", driver.ErrBadConn, ""},
		{"protocol violation: the fatal rule's", physical.ProtocolError("a:1", errors.New("bad packet")), ""},
		{"connection reset", reset, "connection lost"},
		{"EOF", io.EOF, "connection lost"},
		{"unexpected EOF wrapped", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), "connection lost"},
		{"i/o timeout", timeout, "connection lost"},
		{"invalid connection", mysql.ErrInvalidConn, "connection lost"},
		// The caller's deadline tells something only with the node's own silence (callerDeadline).
		{"statement deadline", context.DeadlineExceeded, ""},
		{"statement deadline wrapped", fmt.Errorf("query: %w", context.DeadlineExceeded), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := passiveSignal(tc.err)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("passiveSignal(%v) = %q, want one holding %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestStallThreshold(t *testing.T) {
	for _, tc := range []struct{ latency, want time.Duration }{
		{0, stallFloor},
		{time.Millisecond, stallFloor},
		{50 * time.Millisecond, 500 * time.Millisecond},
	} {
		if got := stallThreshold(tc.latency); got != tc.want {
			t.Errorf("stallThreshold(%v) = %v, want %v", tc.latency, got, tc.want)
		}
	}
}

// passiveCounts returns addr's passive signals, probes and passive transitions.
func passiveCounts(c *Connector, addr string) (signals, probes, ejections uint64) {
	ns, _ := c.Stats().Node(addr)
	return ns.PassiveSignals, ns.Probes, ns.TransitionsBy[CausePassive]
}

// beyondStall waits until c's stall threshold is at its floor (the fleet's latency estimate
// has taken in the statements that just ran: one sample taken with a slow statement in flight
// on a loaded machine can raise it for a while) and returns a statement deadline past twice
// the threshold: a statement cut by it on a silent proxy shows the proxy slow.
func beyondStall(t *testing.T, c *Connector) time.Duration {
	t.Helper()
	// At the floor for three ticks in a row: the stall loop has taken in every statement that
	// landed before (one it samples with the next statement already stalled would count that
	// statement's wait as the fleet's latency).
	atFloor := 0
	waitFor(t, 5*time.Second, "the stall threshold to settle", func() bool {
		if time.Duration(c.stallBase.Load()) != stallFloor {
			atFloor = 0
			return false
		}
		atFloor++
		time.Sleep(stallTick)
		return atFloor >= 3
	})
	return 2*stallFloor + stallFloor
}

// TestPassiveSignalTheProbeDoesNotConfirm: a statement that runs into its deadline after its
// proxy was silent for more than the stall threshold, and one whose connection is reset, are
// signals against their proxy; its probe still answers, so it stays up.
func TestPassiveSignalTheProbeDoesNotConfirm(t *testing.T) {
	slow := func(q string) *mysqlfake.Result {
		if strings.Contains(q, "slow") {
			time.Sleep(time.Second)
		}
		return mysqlfake.DefaultAnswer("SELECT 1")
	}
	srvs := startFakes(t, 3, mysqlfake.Config{Answer: slow})
	for _, s := range srvs {
		s.AddFault(mysqlfake.Fault{Name: "command/reset", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Reset,
			Match: mysqlfake.QueryContains("boom")})
	}
	db, c := openFakeDB(t, srvs, "", firstListed())
	db.SetMaxOpenConns(1)
	for i, q := range []string{"SELECT /* slow */ 1", "SELECT /* boom */ 1"} {
		ctx, cancel := context.WithTimeout(context.Background(), beyondStall(t, c))
		_, err := db.ExecContext(ctx, q)
		cancel()
		if err == nil {
			t.Fatalf("%s: no error", q)
		}
		// Each statement may dial afresh, on whichever node's turn it is; find where the signal
		// went, and wait for the probe it brought forward.
		var hit string
		waitFor(t, 5*time.Second, "a signal and its confirming probe", func() bool {
			total := uint64(0)
			hit = ""
			for _, ns := range c.Stats().Nodes {
				total += ns.PassiveSignals
				if ns.PassiveSignals > 0 {
					if ns.Probes == 0 {
						return false
					}
					hit = ns.Addr
				}
			}
			return total >= uint64(i+1)
		})
		t.Logf("%s: %v; signal against %s", q, err, hit)
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != StateUp || ns.TransitionsBy[CausePassive] != 0 {
			t.Errorf("%s: %v, %d passive ejections; its probe answers, it must stay up", ns.Addr, ns.State, ns.TransitionsBy[CausePassive])
		}
	}
}

// TestPassiveSignalTheProbeConfirms: a statement timeout on a proxy silent for more than the
// stall threshold, whose probe stalls too, ejects it at once, long before its next scheduled
// probe.
func TestPassiveSignalTheProbeConfirms(t *testing.T) {
	srvs := startFakes(t, 3, mysqlfake.Config{})
	db, c := openFakeDB(t, srvs, "", firstListed(), WithCheckHealthInterval(time.Hour))
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	addr := srvs[0].Addr()
	if ns, _ := c.Stats().Node(addr); ns.Open != 1 {
		t.Fatalf("the first connection is not on the first listed node: %+v", c.Stats().Nodes)
	}
	srvs[0].AddFault(mysqlfake.Fault{Name: "command/stall", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Stall,
		Match: mysqlfake.QueryContains("SELECT")})
	ctx, cancel := context.WithTimeout(context.Background(), beyondStall(t, c))
	_, err = conn.ExecContext(ctx, "SELECT 1")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("statement on the stalled proxy: %v, want its deadline", err)
	}
	waitFor(t, 5*time.Second, "the passive ejection", func() bool {
		_, _, ejections := passiveCounts(c, addr)
		return ejections == 1
	})
	var down Transition
	for _, x := range c.Stats().Recent {
		if x.Node == addr && x.To == StateDown {
			down = x
		}
	}
	if down.Cause != CausePassive || !strings.Contains(down.Reason, "statement timeout") || !strings.Contains(down.Reason, "confirming probe failed") {
		t.Fatalf("transition %+v: want a passive one naming the timeout and the probe", down)
	}
	// The cap: with one of three out, the others' signals eject nothing.
	for _, s := range srvs[1:] {
		s.AddFault(mysqlfake.Fault{Name: "command/stall", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Stall,
			Match: mysqlfake.QueryContains("SELECT")})
	}
	for range 3 {
		// Past twice the threshold now, without waiting for it to settle: statements stalled
		// here keep the estimate where it is.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Duration(c.stallBase.Load())+stallFloor)
		_, _ = db.ExecContext(ctx, "SELECT 1")
		cancel()
	}
	signals := uint64(0)
	for _, s := range srvs[1:] {
		ns, _ := c.Stats().Node(s.Addr())
		signals += ns.PassiveSignals
		if ns.State != StateUp {
			t.Fatalf("%s went %v: of three proxies, the cap allows one passive ejection", ns.Addr, ns.State)
		}
	}
	if signals == 0 {
		t.Fatal("no signal reached the other proxies: the cap was not put to the test")
	}
}

// fleet drives a stallWatch over nodes by hand: each step moves the fake clock one stallTick
// and lands answered[i] statements on node i, keeping inFlight[i] on the wire.
type fleet struct {
	w         stallWatch
	nodes     []*node
	now       time.Time
	suspected []string // "node@ms since start"
	start     time.Time
}

func newFleet(n int) *fleet {
	f := &fleet{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.start, f.w.last = f.now, f.now
	for i := range n {
		f.nodes = append(f.nodes, &node{addr: fmt.Sprintf("n%d", i), phys: &physical.Node{}})
	}
	return f
}

func (f *fleet) step(inFlight []int64, answered []uint64) time.Duration {
	f.now = f.now.Add(stallTick)
	for i, n := range f.nodes {
		n.phys.Flight.InFlight.Store(inFlight[i])
		n.phys.Flight.Landed.Add(answered[i])
	}
	return f.w.tick(f.now, f.nodes, func(n *node, signal string) {
		if !strings.Contains(signal, "none answered") {
			panic(signal)
		}
		f.suspected = append(f.suspected, fmt.Sprintf("%s@%d", n.addr, f.now.Sub(f.start).Milliseconds()))
	})
}

func TestStallWatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight []int64
		answered []uint64
		steps    int
		want     string
	}{
		{"a hung node, its peers answering: at the floor, then backing off", []int64{2, 2, 3}, []uint64{10, 10, 0}, 40,
			"n2@150 n2@250 n2@450 n2@850 n2@1650"},
		{"nobody answers: no node is singled out", []int64{2, 2, 3}, []uint64{0, 0, 0}, 40, ""},
		{"an idle node is not stalled", []int64{2, 2, 0}, []uint64{10, 10, 0}, 40, ""},
		{"slow statements fleet-wide raise the threshold", []int64{10, 10, 3}, []uint64{1, 1, 0}, 40, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(len(tc.inFlight))
			for range tc.steps {
				f.step(tc.inFlight, tc.answered)
			}
			if got := strings.Join(f.suspected, " "); got != tc.want {
				t.Fatalf("suspected %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStallWatchThreshold: the threshold follows the fleet's latency by Little's law.
func TestStallWatchThreshold(t *testing.T) {
	f := newFleet(2)
	var base time.Duration
	for range 100 {
		// 20 statements in flight, 10 answered per 50 ms: 100 ms each.
		base = f.step([]int64{10, 10}, []uint64{5, 5})
	}
	if base < 990*time.Millisecond || base > time.Second {
		t.Fatalf("threshold %v, want 10 × 100 ms", base)
	}
	// A node that answers again is forgiven its back-off.
	f = newFleet(3)
	for range 10 {
		f.step([]int64{2, 2, 3}, []uint64{10, 10, 0})
	}
	f.step([]int64{2, 2, 3}, []uint64{10, 10, 1})
	f.suspected = nil
	for range 5 {
		f.step([]int64{2, 2, 3}, []uint64{10, 10, 0})
	}
	// The fleet answers 20 statements per tick with 4 to 7 in flight: about 11 ms each, so the
	// threshold is 10 × that, 108 ms, just above the floor: suspected again at the first tick
	// past it (700 ms), then after the doubled threshold (800 ms).
	if got := strings.Join(f.suspected, " "); got != "n2@700 n2@800" {
		t.Fatalf("after an answer: suspected %q, want again a threshold after the answer at 550 ms (n2@700), then backing off (n2@800)", got)
	}
}
