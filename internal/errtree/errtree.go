// Package errtree walks the tree of errors that errors.Is and errors.As search: an error and
// everything reachable from it through Unwrap() error (fmt.Errorf with one %w) and
// Unwrap() []error (errors.Join, fmt.Errorf with several %w).
//
// Unlike errors.Is, a walk is bounded: an error type whose Unwrap returns itself, or a list
// that holds itself, or a tree that joins the same error to itself over and over, ends the walk
// instead of hanging the caller. A typed nil (a nil pointer behind an error interface) is
// visited but never unwrapped, since its Unwrap method may dereference it.
package errtree

import "reflect"

const (
	// maxDepth bounds the number of Unwrap steps from the root to any error visited. Real
	// chains are a few layers deep; a chain this long is a cycle.
	maxDepth = 1024

	// maxVisits bounds the errors visited in one walk. It is far above any real tree (a failed
	// Connect over 50 000 nodes holds about five errors per node) and stops a tree that joins
	// the same error to itself, whose paths double at every level.
	maxVisits = 1 << 20
)

// Walk calls visit on err and on every error err wraps, depth first and in order (the order
// errors.Is and errors.As search), until visit returns true; it reports whether that happened.
// A nil err, and nil entries of an Unwrap() []error list, are skipped. The walk gives up,
// reporting false, after maxDepth Unwrap steps along one path or maxVisits errors in all.
func Walk(err error, visit func(error) bool) bool {
	w := walker{visit: visit}
	return w.walk(err, 0)
}

type walker struct {
	visit  func(error) bool
	visits int
}

func (w *walker) walk(err error, depth int) bool {
	for ; err != nil && depth <= maxDepth && w.visits < maxVisits; depth++ {
		w.visits++
		if w.visit(err) {
			return true
		}
		if isNil(err) {
			return false
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if w.walk(e, depth+1) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// Contains reports whether target is err or an error in err's tree, by identity (==), the
// comparison errors.Is makes before it asks an Is method. Values of types that cannot be
// compared never match, rather than panicking as == would. A nil err or target gives false.
func Contains(err, target error) bool {
	if err == nil || target == nil || !reflect.TypeOf(target).Comparable() {
		return false
	}
	return Walk(err, func(e error) bool {
		return reflect.TypeOf(e).Comparable() && e == target
	})
}

// Is is errors.Is with the walk's bounds: it reports whether an error in err's tree equals
// target (==, for comparable types) or has an Is(error) bool method that says it matches. It
// answers as errors.Is does on every tree errors.Is can finish, and false where errors.Is
// would loop forever.
func Is(err, target error) bool {
	if err == nil || target == nil {
		return err == target
	}
	comparable := reflect.TypeOf(target).Comparable()
	return Walk(err, func(e error) bool {
		if comparable && e == target {
			return true
		}
		x, ok := e.(interface{ Is(error) bool })
		return ok && !isNil(e) && x.Is(target)
	})
}

// IsLeaf reports whether err wraps nothing: it is where an error chain started, as opposed to
// a layer of context added on the way up. A typed nil is a leaf.
func IsLeaf(err error) bool {
	if isNil(err) {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap() == nil
	case interface{ Unwrap() []error }:
		return len(u.Unwrap()) == 0
	}
	return true
}

// isNil reports whether err is nil or a nil value of a pointer-like type behind the interface.
func isNil(err error) bool {
	if err == nil {
		return true
	}
	switch v := reflect.ValueOf(err); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}
