package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/lbd-go/lbd/nodes"
)

// Why a config-server gave no usable list. Errors from Start wrap them (errors.Is works), each
// inside a *ServerError naming the config-server.
var (
	// ErrUnreachable: no connection, or no answer within Config.Timeout.
	ErrUnreachable = errors.New("config-server unreachable")
	// ErrForbidden: HTTP 403, the config-server refused the API key (configServerApiKey)
	// or wanted one.
	ErrForbidden = errors.New("config-server refused the API key (HTTP 403): check configServerApiKey")
	// ErrUnknownSchema: answer code 404, the config-server has no such schema
	// (configServerSchema).
	ErrUnknownSchema = errors.New("config-server does not know the schema (code 404): check configServerSchema")
	// ErrBadAnswer: an HTTP status other than 200 (a redirect included: none is followed), a
	// body that is not the expected JSON or is larger than 1 MiB, an md5 that is not 32 hex
	// digits, or an answer code other than 200 and 304.
	ErrBadAnswer = errors.New("config-server gave an unusable answer")
	// ErrEmptyList: the answer's proxy list is empty; lbd never applies one.
	ErrEmptyList = errors.New("config-server answered an empty proxy list")
	// ErrMalformedEntry: an entry of the answer's list is not host:port (see
	// nodes.CheckAddr), or is listed twice once in canonical form (nodes.Canonical). The
	// whole answer is refused.
	ErrMalformedEntry = errors.New("config-server answered a malformed proxy list")
	// ErrTooLong: the answer's list has more than nodes.MaxNodes entries. The whole answer
	// is refused and the current list kept; errors.Is(err, nodes.ErrTooManyNodes) holds too.
	ErrTooLong = fmt.Errorf("config-server answered too long a proxy list: %w", nodes.ErrTooManyNodes)
)

// ServerError is one config-server's failure to give a usable list. It never contains the API
// key.
type ServerError struct {
	// Server is the config-server address as configured.
	Server string
	// Kind is one of ErrUnreachable, ErrForbidden, ErrUnknownSchema, ErrBadAnswer,
	// ErrEmptyList, ErrMalformedEntry and ErrTooLong.
	Kind error
	// Detail says more: the network error, the HTTP status, the bad entry.
	Detail string

	// cond is the condition key: the kind plus what separates two conditions of one kind
	// (the HTTP status, the answer code), never a varying message.
	cond string
}

// Error implements error.
func (e *ServerError) Error() string {
	if e.Detail == "" {
		return e.Server + ": " + e.Kind.Error()
	}
	return e.Server + ": " + e.Kind.Error() + ": " + e.Detail
}

// Unwrap returns Kind, so that errors.Is(err, ErrForbidden) and the like work.
func (e *ServerError) Unwrap() error { return e.Kind }

func newServerError(srv server, kind error, sub, detail string) *ServerError {
	cond := kind.Error()
	if sub != "" {
		cond += " " + sub
	}
	return &ServerError{Server: srv.name, Kind: kind, Detail: detail, cond: cond}
}

// unreachable describes a failed connection or request, without the request's URL (which
// repeats what the log line already says) and with a plain word for a timeout.
func unreachable(srv server, err error, timeoutAfter string) *ServerError {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	detail := err.Error()
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		detail = "no answer within " + timeoutAfter
	}
	return newServerError(srv, ErrUnreachable, "", detail)
}

func badStatus(srv server, status int) *ServerError {
	return newServerError(srv, ErrBadAnswer, "http "+strconv.Itoa(status), fmt.Sprintf("HTTP status %d", status))
}
