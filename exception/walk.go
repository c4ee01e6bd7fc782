package exception

// walk calls visit on err and on every error reachable from it through
// Unwrap() error or Unwrap() []error (fmt.Errorf with %w, errors.Join, ...),
// depth first and in order, the same tree errors.Is and errors.As search.
// It stops as soon as visit returns true and reports whether that happened.
func walk(err error, visit func(error) bool) bool {
	for err != nil {
		if visit(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walk(e, visit) {
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

// isLeaf reports whether err wraps nothing: it is where an error chain
// started, as opposed to a layer of context added on the way up.
func isLeaf(err error) bool {
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return u.Unwrap() == nil
	case interface{ Unwrap() []error }:
		return len(u.Unwrap()) == 0
	}
	return true
}
