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
