// Package statuscheck provides the HTTP status check behind lbd's statusURL parameter. Import
// it for its effect alone, in the program or any package of it:
//
//	import _ "github.com/lbd-go/lbd/statuscheck"
//
// A Connector whose DSN or Config sets statusURL is refused without it (lbd.NewConnector
// returns an error naming this import). It lives apart from the root package because it
// links net/http, which adds about 2 MB to a program's binary; a program that asks no status
// URL does not pay for it.
//
// The check is an HTTP GET of each node's status URL on every probe of the node: no redirect is
// followed, no connection is kept between checks, at most 4 KiB of the answer's body is read,
// and each phase (dial, TLS handshake, headers, the whole request) is bounded by the probe's
// timeout (checkHealthTimeoutMillis). What the answer means is the root package's: see
// statusURL in its reference.
package statuscheck

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/lbd-go/lbd/internal/statushook"
)

// bodyLimit is how much of an answer's body is read (and discarded) so that the connection
// closes cleanly; the rest is not read.
const bodyLimit = 4 << 10

func init() { statushook.Register(newGet) }

// newGet builds one Connector's status check, every phase bounded by timeout.
func newGet(timeout time.Duration) statushook.Get {
	client := &http.Client{
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
	return func(ctx context.Context, u string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			// The root names the URL without its query, which may carry a token; *url.Error
			// would print it whole.
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				err = ue.Err
			}
			return 0, err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, bodyLimit))
		resp.Body.Close()
		return resp.StatusCode, nil
	}
}
