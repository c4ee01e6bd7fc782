package lbd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The status check (statusURL): besides its SQL probe, each node's HTTP status endpoint is asked
// on every probe, as TiDB's status port (/status answers 200 while the server serves and 500
// from the moment a graceful shutdown begins) or a proxy's health URL lets a load balancer
// drain a server before its SQL port closes. A 2xx answer passes; any other answer (5xx, 4xx,
// a redirect, which is not followed) says the node is not serving: it is drained at once as on
// a 1053 (CauseShutdown). No answer within the probe's deadline, or no connection, fails the
// probe as a failed SQL probe does.

// Placeholders of a statusURL template.
const (
	statusHostPlaceholder = "{host}" // the node's host ([v6addr] for an IPv6 address)
	statusPortPlaceholder = "{port}" // the node's SQL port
)

// statusBodyLimit is how much of a status answer's body is read (and discarded) so that the
// connection closes cleanly; the rest is not read.
const statusBodyLimit = 4 << 10

// errStatusNotServing is the probe error of a status check whose answer was not 2xx.
var errStatusNotServing = errors.New("lbd: status check: the node says it is not serving")

// checkStatusTemplate reports what is wrong with a statusURL template, or nil.
func checkStatusTemplate(tmpl string) error {
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
	return strings.NewReplacer(statusHostPlaceholder, host, statusPortPlaceholder, port).Replace(tmpl)
}

// newStatusClient is the client of the status checks: no redirect is followed, no connection
// is kept between checks (so that Close leaves no goroutine behind), and every phase is bounded
// by timeout besides the probe's own deadline.
func newStatusClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            (&net.Dialer{Timeout: timeout}).DialContext,
			TLSHandshakeTimeout:    timeout,
			ResponseHeaderTimeout:  timeout,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 16 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       timeout,
	}
}

// checkStatus asks the node's status URL under ctx; nil when there is none to ask.
func (p *nodeProbe) checkStatus(ctx context.Context) error {
	c := p.owner
	if c.statusClient == nil {
		return nil
	}
	host, port, err := net.SplitHostPort(p.n.addr)
	if err != nil {
		return fmt.Errorf("lbd: status check: %w", err)
	}
	u := statusURLFor(c.cfg.StatusURL, host, port)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("lbd: status check: %w", err)
	}
	resp, err := c.statusClient.Do(req)
	if err != nil {
		return fmt.Errorf("lbd: status check %s: %w", redactURL(u), err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, statusBodyLimit))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w: %s answered %d", errStatusNotServing, redactURL(u), resp.StatusCode)
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
