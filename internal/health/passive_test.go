package health

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

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
		{0, StallFloor},
		{time.Millisecond, StallFloor},
		{50 * time.Millisecond, 500 * time.Millisecond},
	} {
		if got := stallThreshold(tc.latency); got != tc.want {
			t.Errorf("stallThreshold(%v) = %v, want %v", tc.latency, got, tc.want)
		}
	}
}

// fleet drives a stallWatch over nodes by hand: each step moves the fake clock one StallTick
// and lands answered[i] statements on node i, keeping inFlight[i] on the wire.
type fleet struct {
	w         stallWatch
	nodes     []*Node
	now       time.Time
	suspected []string // "node@ms since start"
	start     time.Time
}

func newFleet(n int) *fleet {
	f := &fleet{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.start, f.w.last = f.now, f.now
	for range n {
		f.nodes = append(f.nodes, &Node{phys: &physical.Node{}})
	}
	return f
}

func (f *fleet) step(inFlight []int64, answered []uint64) time.Duration {
	f.now = f.now.Add(StallTick)
	for i, n := range f.nodes {
		n.phys.Flight.InFlight.Store(inFlight[i])
		n.phys.Flight.Landed.Add(answered[i])
	}
	return f.w.tick(f.now, f.nodes, func(n *Node, signal string) {
		if !strings.Contains(signal, "none answered") {
			panic(signal)
		}
		f.suspected = append(f.suspected, fmt.Sprintf("n%d@%d", slices.Index(f.nodes, n), f.now.Sub(f.start).Milliseconds()))
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

// TestErrorWatch drives the error-rate watch by hand over three nodes: each window of
// errorWindow lands answered[i] statements on node i, failed[i] of them errors.
func TestErrorWatch(t *testing.T) {
	for _, tc := range []struct {
		name             string
		answered, failed []uint64
		windows          int
		want             string // the ejections, "node@window"
	}{
		{"one node fails nearly all, the others few: ejected at its second window, then again two later",
			[]uint64{40, 40, 40}, []uint64{38, 1, 1}, 5, "n0@2 n0@4"},
		{"every node fails alike: no outlier", []uint64{40, 40, 40}, []uint64{20, 20, 20}, 5, ""},
		{"too few statements to judge", []uint64{10, 40, 40}, []uint64{10, 0, 0}, 5, ""},
		{"under half failed: no outlier", []uint64{40, 40, 40}, []uint64{19, 0, 0}, 5, ""},
		{"the others fail too often for a ratio of five", []uint64{40, 40, 40}, []uint64{40, 10, 10}, 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*Node
			for range tc.answered {
				nodes = append(nodes, &Node{phys: &physical.Node{}})
			}
			var w errorWatch
			var ejected []string
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			window := 0
			eject := func(n *Node, evidence string) {
				if !strings.Contains(evidence, "answered with errors") {
					t.Fatalf("evidence %q", evidence)
				}
				ejected = append(ejected, fmt.Sprintf("n%d@%d", slices.Index(nodes, n), window))
			}
			w.tick(now, nodes, eject) // opens the first window
			for window = 1; window <= tc.windows; window++ {
				for i, n := range nodes {
					n.phys.Flight.Landed.Add(tc.answered[i])
					n.answeredErrors.Add(tc.failed[i])
				}
				// A tick within the window closes nothing.
				w.tick(now.Add(errorWindow/2), nodes, eject)
				now = now.Add(errorWindow)
				w.tick(now, nodes, eject)
			}
			if got := strings.Join(ejected, " "); got != tc.want {
				t.Fatalf("ejected %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNoteStatementError: only errors the server answered that may be the node's own count
// toward its error rate.
func TestNoteStatementError(t *testing.T) {
	n := &Node{}
	for _, err := range []error{
		&mysql.MySQLError{Number: 1105, Message: "proxy: backend pool exhausted"},
		&mysql.MySQLError{Number: 1062, Message: "Duplicate entry"},
	} {
		n.noteStatementError(err)
	}
	for _, err := range []error{
		&mysql.MySQLError{Number: 1290, Message: "read-only"},     // not the primary: the role rules'
		&mysql.MySQLError{Number: 1045, Message: "Access denied"}, // the same on every node
		io.EOF, // no answer: a passive signal, not an error rate
	} {
		n.noteStatementError(err)
	}
	if got := n.answeredErrors.Load(); got != 2 {
		t.Fatalf("%d errors counted, want 2", got)
	}
}
