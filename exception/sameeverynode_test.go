package exception

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestSameOnEveryNode(t *testing.T) {
	var nilMySQLErr *mysql.MySQLError
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"1044 no access to the database", myErr(1044, "42000", "Access denied for user 'u'@'%' to database 'd'"), true},
		{"1045 wrong password", myErr(1045, "28000", "Access denied for user 'u'@'h'"), true},
		{"1049 unknown database", myErr(1049, "42000", "Unknown database 'd'"), true},
		{"1193 unknown system variable", myErr(1193, "HY000", "Unknown system variable 'x'"), true},
		{"1698 needs another auth method", myErr(1698, "28000", "Access denied for user 'root'@'localhost'"), true},
		{"wrapped", fmt.Errorf("lbd: connect: %w", myErr(1049, "42000", "x")), true},
		{"joined behind a transport error", errors.Join(io.EOF, myErr(1045, "28000", "x")), true},
		{"1040 too many connections is the node's own", myErr(1040, "08004", "Too many connections"), false},
		{"1062 duplicate key", myErr(erDupEntry, "23000", "x"), false},
		{"1142 table access denied is per statement", myErr(erTableAccess, "42000", "x"), false},
		{"ob 8001", myErr(8001, "08004", "Server is initializing"), false},
		{"transport error", io.EOF, false},
		{"typed nil server error", nilMySQLErr, false},
		{"typed nil server error wrapped", fmt.Errorf("x: %w", nilMySQLErr), false},
		// errors.As semantics: the first server error in the tree decides.
		{"first server error decides", errors.Join(myErr(1040, "08004", "x"), myErr(1045, "28000", "x")), false},
	}
	for _, tt := range tests {
		if got := SameOnEveryNode(tt.err); got != tt.want {
			t.Errorf("%s: SameOnEveryNode(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestSameOnEveryNodeNumberSet pins the exact set, so that adding or dropping a number is a
// deliberate, visible change.
func TestSameOnEveryNodeNumberSet(t *testing.T) {
	want := []uint16{1044, 1045, 1049, 1193, 1698}
	if len(sameOnEveryNodeNumbers) != len(want) {
		t.Errorf("sameOnEveryNodeNumbers has %d entries, want %d: %v", len(sameOnEveryNodeNumbers), len(want), sameOnEveryNodeNumbers)
	}
	for _, n := range want {
		if !sameOnEveryNodeNumbers[n] {
			t.Errorf("%d is missing from sameOnEveryNodeNumbers", n)
		}
	}
}

// loopErr unwraps to itself, a tree errors.Is and errors.As never finish.
type loopErr struct{}

func (e *loopErr) Error() string { return "loop" }
func (e *loopErr) Unwrap() error { return e }

// TestCyclicErrorTree: an error type whose Unwrap returns itself must not hang the rules.
func TestCyclicErrorTree(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if fatal, reason := Classify(&loopErr{}); fatal {
			t.Errorf("Classify(loop) = fatal %q", reason)
		}
		if fatal, reason := Classify(errors.Join(&loopErr{}, io.EOF)); !fatal || reason != ReasonEOF {
			t.Errorf("Classify(loop + EOF) = %v %q, want fatal %q", fatal, reason, ReasonEOF)
		}
		if SameOnEveryNode(&loopErr{}) {
			t.Error("SameOnEveryNode(loop) = true")
		}
		if !SameOnEveryNode(errors.Join(&loopErr{}, myErr(1049, "42000", "x"))) {
			t.Error("SameOnEveryNode misses 1049 next to a loop")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the rules are still walking a cyclic error tree after 10s")
	}
}
