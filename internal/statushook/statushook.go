// Package statushook joins the root package to the HTTP status check (the statusURL
// parameter) without the root importing net/http, which would add megabytes to every program
// that links lbd: package statuscheck registers its client here from its init, and the root
// asks for it when it builds a Connector with a statusURL, as database/sql finds a driver
// registered by an import.
package statushook

import (
	"context"
	"sync/atomic"
	"time"
)

// Get asks one status URL under ctx and returns the HTTP status code of the answer, which it
// reads no more of than a few KiB; err when no answer came (no connection, ctx done, a phase
// past its timeout). A redirect is an answer: it is not followed. Safe for concurrent use.
type Get func(ctx context.Context, url string) (code int, err error)

// New builds the Get of one Connector, every phase of whose requests (dial, TLS handshake,
// headers, the whole request) is bounded by timeout. Its requests keep no connection between
// them, so that nothing outlives the Connector.
type New func(timeout time.Duration) Get

var registered atomic.Pointer[New]

// Register makes n the status check; the last one registered wins.
func Register(n New) { registered.Store(&n) }

// Registered returns the registered status check, or nil when no package registered one.
func Registered() New {
	if p := registered.Load(); p != nil {
		return *p
	}
	return nil
}
