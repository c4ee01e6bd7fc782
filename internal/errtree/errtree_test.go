package errtree

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
)

// chainErr wraps one error through Unwrap() error; a nil *chainErr is a typed nil whose Unwrap
// would panic.
type chainErr struct {
	name string
	next error
}

func (e *chainErr) Error() string { return e.name }
func (e *chainErr) Unwrap() error { return e.next }

// loopErr unwraps to itself.
type loopErr struct{}

func (e *loopErr) Error() string { return "loop" }
func (e *loopErr) Unwrap() error { return e }

// joinLoop unwraps to a list holding itself.
type joinLoop struct{ other error }

func (e *joinLoop) Error() string   { return "join loop" }
func (e *joinLoop) Unwrap() []error { return []error{e.other, e} }

// sliceErr is an error type whose values cannot be compared with ==.
type sliceErr []string

func (e sliceErr) Error() string { return fmt.Sprint([]string(e)) }

// structErr is a struct error type holding a slice: not comparable either.
type structErr struct{ parts []string }

func (e structErr) Error() string { return fmt.Sprint(e.parts) }

var (
	errA = errors.New("a")
	errB = errors.New("b")
	errC = errors.New("c")
)

// names lists what Walk visits, in order, by text.
func names(err error) []string {
	var out []string
	Walk(err, func(e error) bool {
		out = append(out, fmt.Sprint(e)) // prints "<nil>" for a typed nil whose Error panics
		return false
	})
	return out
}

func TestWalkOrder(t *testing.T) {
	var typedNil *chainErr
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"nil", nil, nil},
		{"leaf", errA, []string{"a"}},
		{"chain", &chainErr{"x", &chainErr{"y", errA}}, []string{"x", "y", "a"}},
		{"chain ending in nil", &chainErr{"x", nil}, []string{"x"}},
		{"fmt %w", fmt.Errorf("ctx: %w", errA), []string{"ctx: a", "a"}},
		{"fmt two %w", fmt.Errorf("%w+%w", errA, errB), []string{"a+b", "a", "b"}},
		{"join, depth first", errors.Join(&chainErr{"x", errA}, errB), []string{"x\nb", "x", "a", "b"}},
		{"join with nil entries", &joinLoopless{[]error{nil, errA, nil}}, []string{"list", "a"}},
		{"empty join", &joinLoopless{nil}, []string{"list"}},
		{"typed nil visited, not unwrapped", fmt.Errorf("ctx: %w", &chainErr{"x", error(typedNil)}), []string{"ctx: x", "x", "<nil>"}},
	}
	for _, tt := range tests {
		got := func() (got []string) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: Walk panicked: %v", tt.name, r)
				}
			}()
			return names(tt.err)
		}()
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: visited %q, want %q", tt.name, got, tt.want)
		}
	}
}

// joinLoopless is a list error whose entries are given as is (errors.Join drops nils).
type joinLoopless struct{ errs []error }

func (e *joinLoopless) Error() string   { return "list" }
func (e *joinLoopless) Unwrap() []error { return e.errs }

func TestWalkStops(t *testing.T) {
	tree := errors.Join(fmt.Errorf("x: %w", errA), errors.Join(errB, errC))
	for _, target := range []error{errA, errB, errC} {
		var seen []error
		found := Walk(tree, func(e error) bool {
			seen = append(seen, e)
			return e == target
		})
		if !found {
			t.Errorf("Walk did not report finding %v", target)
		}
		if last := seen[len(seen)-1]; last != target {
			t.Errorf("Walk went on after %v: last visited %v", target, last)
		}
	}
	if Walk(tree, func(error) bool { return false }) {
		t.Error("Walk reports a stop nobody asked for")
	}
}

func TestWalkIsBounded(t *testing.T) {
	doubling := error(errA)
	for range 60 {
		doubling = errors.Join(doubling, doubling) // 2^61 paths to errA
	}
	deep := error(errA)
	for range 3 * maxDepth {
		deep = &chainErr{"layer", deep}
	}
	for _, tt := range []struct {
		name string
		err  error
		max  int
	}{
		{"self loop", &loopErr{}, maxDepth + 1},
		{"join loop", &joinLoop{errA}, maxVisits},
		{"doubling join", doubling, maxVisits},
		{"deep chain", deep, maxDepth + 1},
	} {
		n := 0
		Walk(tt.err, func(error) bool { n++; return false })
		if n == 0 || n > tt.max {
			t.Errorf("%s: %d visits, want 1..%d", tt.name, n, tt.max)
		}
	}
}

func TestContains(t *testing.T) {
	se := sliceErr{"a"}
	st := structErr{[]string{"a"}}
	tests := []struct {
		name        string
		err, target error
		want        bool
	}{
		{"nil err", nil, errA, false},
		{"nil target", errA, nil, false},
		{"itself", errA, errA, true},
		{"wrapped", fmt.Errorf("x: %w", errA), errA, true},
		{"joined", errors.Join(errB, fmt.Errorf("x: %w", errA)), errA, true},
		{"absent", errors.Join(errB, errC), errA, false},
		{"by identity, not by text", fmt.Errorf("x: %w", errors.New("a")), errA, false},
		{"pointer identity", fmt.Errorf("x: %w", &chainErr{"x", nil}), &chainErr{"x", nil}, false},
		{"non-comparable target", fmt.Errorf("x: %w", se), se, false},
		{"non-comparable in the tree", errors.Join(se, st, errA), errA, true},
		{"non-comparable in the tree and as target", errors.Join(se, st), st, false},
		{"self loop", &loopErr{}, errA, false},
	}
	for _, tt := range tests {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: Contains panicked: %v", tt.name, r)
				}
			}()
			if got := Contains(tt.err, tt.target); got != tt.want {
				t.Errorf("%s: Contains = %v, want %v", tt.name, got, tt.want)
			}
		}()
	}
}

func TestIsLeaf(t *testing.T) {
	var typedNil *chainErr
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"plain", errA, true},
		{"io.EOF", io.EOF, true},
		{"wrapper", fmt.Errorf("x: %w", errA), false},
		{"chain ending", &chainErr{"x", nil}, true},
		{"join", errors.Join(errA, errB), false},
		{"empty list", &joinLoopless{nil}, true},
		{"typed nil", typedNil, true},
		{"fmt without %w", fmt.Errorf("x: %v", errA), true},
	}
	for _, tt := range tests {
		if got := IsLeaf(tt.err); got != tt.want {
			t.Errorf("%s: IsLeaf = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// oddErr matches every error named like it, through an Is method.
type oddErr struct{ name string }

func (e oddErr) Error() string        { return e.name }
func (e oddErr) Is(target error) bool { t, ok := target.(oddErr); return ok && t.name == e.name }

func TestIsAgreesWithErrors(t *testing.T) {
	se := sliceErr{"a"}
	trees := []error{
		nil, errA, io.EOF, fmt.Errorf("x: %w", errA), errors.Join(errB, fmt.Errorf("%w", errC)),
		fmt.Errorf("x: %w", oddErr{"o"}), errors.Join(se, errA), &chainErr{"x", &chainErr{"y", nil}},
	}
	targets := []error{nil, errA, errB, errC, io.EOF, oddErr{"o"}, oddErr{"p"}, se}
	for _, tree := range trees {
		for _, target := range targets {
			want := errors.Is(tree, target)
			if got := Is(tree, target); got != want {
				t.Errorf("Is(%v, %v) = %v, errors.Is says %v", tree, target, got, want)
			}
		}
	}
}

func TestIsIsBounded(t *testing.T) {
	var typedNil *chainErr
	if Is(&loopErr{}, errA) {
		t.Error("Is finds errA in a self loop")
	}
	if !Is(&joinLoop{errA}, errA) {
		t.Error("Is misses errA in a list that holds itself")
	}
	if Is(fmt.Errorf("x: %w", error(typedNil)), errA) {
		t.Error("Is finds errA behind a typed nil")
	}
}
