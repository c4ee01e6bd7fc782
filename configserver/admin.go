package configserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"unicode"
)

// MinAdminTokenLength is the shortest Config.AdminToken New accepts, in bytes.
const MinAdminTokenLength = 16

// Messages of the admin handler's refusals.
const (
	msgCrossOrigin    = "cross-origin request refused: admin endpoints are for tools such as curl, not for web pages"
	msgHostNotAllowed = "Host must be an IP address or localhost when no admin token is set (a DNS name could be rebound to this address by a web page)"
	msgTokenMissing   = "admin token required: send Authorization: Bearer <token>"
	msgTokenWrong     = "wrong admin token"
)

// checkAdminToken is New's rule for Config.AdminToken: empty, or at least MinAdminTokenLength
// bytes of printable characters without white space (the Authorization header is trimmed, so
// white space could never match).
func checkAdminToken(token string) error {
	if token == "" {
		return nil
	}
	if len(token) < MinAdminTokenLength {
		return fmt.Errorf("configserver: the admin token has %d bytes, want at least %d (for example 32 random hex digits)", len(token), MinAdminTokenLength)
	}
	for _, c := range token {
		if unicode.IsSpace(c) || !unicode.IsPrint(c) {
			return fmt.Errorf("configserver: the admin token holds white space or a control character (%q); use printable characters only", c)
		}
	}
	return nil
}

// AdminHandler returns the handler of the operators' endpoints: GET /monitor, POST /reload,
// POST /health/offline, POST /health/online, and the read-only /health/status and
// /health/check. Serve it on an address that only operators reach (the command's default is
// loopback); Handler serves none of these but the two read-only ones.
//
// Every request is refused, before anything else, when it comes from a web page: HTTP 403 when
// it carries an Origin header, or a Sec-Fetch-Site header other than "none" (an address typed
// by the user). With Config.AdminToken set, every request must carry it as
// "Authorization: Bearer <token>" (HTTP 401 otherwise; compared in constant time), and a
// request carrying it is authenticated: /monitor then shows protected schemas too. Without a
// token the Host header must be an IP address or "localhost" (HTTP 403 otherwise), so a page
// whose DNS name is rebound to a loopback address cannot read /monitor either. State changes
// answer GET with HTTP 405 and an Allow header.
func (s *Server) AdminHandler() http.Handler { return s.admin }

func (s *Server) adminRoutes() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authenticated, ok := s.adminAllowed(w, r)
		if !ok {
			return
		}
		switch r.URL.Path {
		case pathMonitor:
			if methodAllowed(w, r, http.MethodGet, http.MethodHead) {
				s.monitor(w, authenticated)
			}
		case pathReload:
			if methodAllowed(w, r, http.MethodPost) {
				s.reload(w, r)
			}
		case pathOffline:
			if methodAllowed(w, r, http.MethodPost) {
				s.healthOffline(w, r)
			}
		case pathOnline:
			if methodAllowed(w, r, http.MethodPost) {
				s.healthOnline(w, r)
			}
		case pathStatus:
			if methodAllowed(w, r, http.MethodGet, http.MethodHead) {
				s.healthStatus(w, r)
			}
		case pathCheck:
			if methodAllowed(w, r, http.MethodGet, http.MethodHead) {
				writeJSON(w, http.StatusOK, bodyOK)
			}
		default:
			writeError(w, http.StatusNotFound, "not found")
		}
	})
}

// adminAllowed applies the admin handler's guards in order: web pages, then the Host rule or
// the token. It answers the refusal and returns ok false, or returns whether the request
// carried the admin token. Refusals are logged without the header values.
func (s *Server) adminAllowed(w http.ResponseWriter, r *http.Request) (authenticated, ok bool) {
	refuse := func(status int, msg, reason string) (bool, bool) {
		s.log.Warn("configserver: admin request refused", "reason", reason, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lbd-config-server admin"`)
		}
		writeError(w, status, msg)
		return false, false
	}
	if fromWebPage(r) {
		return refuse(http.StatusForbidden, msgCrossOrigin, "cross-origin")
	}
	if s.adminSum == nil {
		if !ipOrLocalhost(r.Host) {
			return refuse(http.StatusForbidden, msgHostNotAllowed, "host name without an admin token")
		}
		return false, true
	}
	key, msg := bearerKey(r.Header.Get("Authorization"))
	if msg == msgMissingKey {
		return refuse(http.StatusUnauthorized, msgTokenMissing, "no admin token")
	}
	sum := sha256.Sum256([]byte(key))
	if msg != "" || subtle.ConstantTimeCompare(sum[:], s.adminSum) != 1 {
		return refuse(http.StatusUnauthorized, msgTokenWrong, "wrong admin token")
	}
	return true, true
}

// fromWebPage reports whether a browser sent r on behalf of a page: browsers add Origin to
// cross-origin requests and to every POST, and Sec-Fetch-Site to everything but old versions;
// "none" means the user typed the address. Tools such as curl send neither.
func fromWebPage(r *http.Request) bool {
	if _, ok := r.Header["Origin"]; ok {
		return true
	}
	site := r.Header.Values("Sec-Fetch-Site")
	return len(site) > 0 && !(len(site) == 1 && strings.EqualFold(site[0], "none"))
}

// ipOrLocalhost reports whether a Host header value names an IP address or localhost, with or
// without a port; an empty Host (HTTP/1.0) passes.
func ipOrLocalhost(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// methodAllowed answers HTTP 405 with an Allow header and returns false unless r's method is
// one of methods.
func methodAllowed(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	allow := strings.Join(methods, ", ")
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed: use %s", r.Method, allow))
	return false
}
