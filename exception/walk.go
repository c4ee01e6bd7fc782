package exception

import "github.com/lbd-go/lbd/internal/errtree"

// Walk calls visit on err and on every error err wraps, through Unwrap() error and
// Unwrap() []error, depth first in the order errors.Is and errors.As search, until visit
// returns true; it reports whether that happened. Unlike errors.As it sees every error of the
// tree, which a Sorter or an integration needs to tell one node's error from several nodes'
// (a failed connect joins one error per proxy).
//
// The walk is bounded: an Unwrap that returns its own error, a list that holds itself or a
// tree that joins one error to itself over and over ends it (reporting false) instead of
// hanging the caller. Nil errors are skipped, and a typed nil is visited but not unwrapped.
func Walk(err error, visit func(error) bool) bool { return errtree.Walk(err, visit) }
