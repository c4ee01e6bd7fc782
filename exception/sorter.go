package exception

// Sorter decides whether an error means the physical connection it came from
// must not be reused.
//
// Implementations must be safe for concurrent use by multiple goroutines,
// must not block (no I/O, no waiting on locks held across I/O), and must
// return false for a nil error.
type Sorter interface {
	// IsFatal reports whether err leaves the connection unusable, so that
	// the connection has to be closed instead of being returned to the pool.
	IsFatal(err error) bool
}

// Classifier is implemented by sorters that can also explain a decision.
// [Default] implements it; callers that log decisions can check for it with
// a type assertion and fall back to IsFatal otherwise.
type Classifier interface {
	Sorter
	// Classify reports whether err is fatal and, when it is, a short stable
	// reason suitable for logs and metrics (see the Reason constants). The
	// reason is empty when the error is not fatal.
	Classify(err error) (fatal bool, reason string)
}

// SorterFunc adapts an ordinary function to the [Sorter] interface.
//
// The adapter itself enforces the nil rule: IsFatal(nil) returns false
// without calling the function, and a nil SorterFunc reports every error as
// not fatal. The function must still honour the other Sorter contracts
// (concurrency safety, no blocking).
type SorterFunc func(err error) bool

// IsFatal calls f(err). It returns false without calling f when err is nil
// or f is nil.
func (f SorterFunc) IsFatal(err error) bool {
	if err == nil || f == nil {
		return false
	}
	return f(err)
}
