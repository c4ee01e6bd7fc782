package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// The status check (statusURL): besides its SQL probe, each node's HTTP status endpoint is asked
// on every probe, as TiDB's status port (/status answers 200 while the server serves and 500
// from the moment a graceful shutdown begins) or a proxy's health URL lets a load balancer
// drain a server before its SQL port closes. A 2xx answer passes; any other answer (5xx, 4xx,
// a redirect, which is not followed) says the node is not serving: it is drained at once as on
// a 1053 (CauseShutdown). No answer within the probe's deadline, or no connection, fails the
// probe as a failed SQL probe does.
//
// The HTTP client lives in package statuscheck, which registers it through internal/statushook
// when a program imports it: the root does not link net/http, and a Connector with a statusURL
// is refused when nothing registered a client (ErrNoStatusCheck, from New).

// Placeholders of a statusURL template.
const (
	statusHostPlaceholder = "{host}" // the node's host ([v6addr] for an IPv6 address)
	statusPortPlaceholder = "{port}" // the node's SQL port
)

// statusCheckPackage is the package whose import provides the HTTP status check.
const statusCheckPackage = "github.com/lbd-go/lbd/statuscheck"

// errStatusNotServing is the probe error of a status check whose answer was not 2xx.
var errStatusNotServing = errors.New("lbd: status check: the node says it is not serving")

// ErrNoStatusCheck refuses a Connector with a statusURL in a program that did not import the
// HTTP status check.
var ErrNoStatusCheck = errors.New(`lbd: statusURL is set but the HTTP status check is not linked into this program: add import _ "` + statusCheckPackage + `" to it (it lives apart so that programs without statusURL do not link net/http)`)

// CheckStatusTemplate reports what is wrong with a statusURL template, or nil; the error
// completes a sentence that begins with the template.
func CheckStatusTemplate(tmpl string) error {
	if !strings.Contains(tmpl, statusHostPlaceholder) {
		return fmt.Errorf("must hold %s, which lbd replaces with each node's host (e.g. http:%%2F%%2F{host}:10080%%2Fstatus: write '/' as %%2F in a DSN)", statusHostPlaceholder)
	}
	u, err := url.Parse(statusURLFor(tmpl, "127.0.0.1", "1"))
	if err != nil {
		return fmt.Errorf("is not a URL: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("must be an http or https URL, not %q", u.Scheme)
	}
	if u.Host == "" || u.User != nil {
		return errors.New("must name the host as {host} and hold no user or password")
	}
	return nil
}

// statusURLFor fills the template for a node of host and SQL port.
func statusURLFor(tmpl, host, port string) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	// One pass from the left, as strings.Replacer would make it (a host holding "{port}" stays
	// as it is), without linking the Replacer's machinery.
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			break
		}
		b.WriteString(tmpl[:i])
		switch tmpl = tmpl[i:]; {
		case strings.HasPrefix(tmpl, statusHostPlaceholder):
			b.WriteString(host)
			tmpl = tmpl[len(statusHostPlaceholder):]
		case strings.HasPrefix(tmpl, statusPortPlaceholder):
			b.WriteString(port)
			tmpl = tmpl[len(statusPortPlaceholder):]
		default:
			b.WriteByte('{')
			tmpl = tmpl[1:]
		}
	}
	b.WriteString(tmpl)
	return b.String()
}

// checkStatus asks the node's status URL under ctx; nil when there is none to ask.
func (p *nodeProbe) checkStatus(ctx context.Context) error {
	m := p.m
	if m.status == nil {
		return nil
	}
	host, port, err := net.SplitHostPort(p.n.Addr())
	if err != nil {
		return fmt.Errorf("lbd: status check: %w", err)
	}
	u := statusURLFor(m.cfg.StatusURL, host, port)
	code, err := m.status(ctx, u)
	if err != nil {
		return fmt.Errorf("lbd: status check %s: %w", redactURL(u), err)
	}
	if code < 200 || code > 299 {
		return fmt.Errorf("%w: %s answered %d", errStatusNotServing, redactURL(u), code)
	}
	return nil
}

// redactURL drops the query of a status URL from messages (it may carry a token).
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i] + "?..."
	}
	return u
}
