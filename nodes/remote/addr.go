package remote

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// server is one config-server address, resolved to the base URL requests go to.
type server struct {
	name     string // as configured, for errors and log lines
	base     string // "http://host:port" or "https://host:port"
	hostPort string // what to dial
}

// parseServer reads "host:port", "[v6addr]:port", "host" or "[v6addr]" (port 80). Port 443
// means https, any other port http, as in lb-driver. With allowScheme, an explicit "http://"
// or "https://" prefix chooses the scheme instead, and the port defaults to the scheme's.
func parseServer(addr string, allowScheme bool) (server, error) {
	raw := strings.TrimSpace(addr)
	scheme := ""
	if allowScheme {
		for _, s := range []string{"http", "https"} {
			if rest, ok := strings.CutPrefix(raw, s+"://"); ok {
				scheme, raw = s, strings.TrimSuffix(rest, "/")
				break
			}
		}
	}
	if raw == "" {
		return server{}, fmt.Errorf("empty config-server address (check for a stray comma)")
	}
	if strings.ContainsAny(raw, "/?#@ ") {
		return server{}, fmt.Errorf("config-server address %q: want host:port", addr)
	}
	host, port, err := net.SplitHostPort(raw)
	if err == nil && port == "" {
		return server{}, fmt.Errorf("config-server address %q ends with ':' but names no port", addr)
	}
	if err != nil {
		// No port: the whole entry is the host, bracketed when it is an IPv6 address.
		host, port = raw, ""
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		}
		if strings.ContainsAny(host, "[]") || (strings.Contains(host, ":") && !strings.HasPrefix(raw, "[")) {
			return server{}, fmt.Errorf("config-server address %q: want host:port (an IPv6 address needs [addr]:port)", addr)
		}
	}
	if host == "" {
		return server{}, fmt.Errorf("config-server address %q has no host", addr)
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return server{}, fmt.Errorf("config-server address %q: port %q, want a number from 1 to 65535", addr, port)
	}
	if scheme == "" {
		scheme = "http"
		if n == 443 {
			scheme = "https"
		}
	}
	hp := net.JoinHostPort(host, strconv.Itoa(n))
	return server{name: strings.TrimSpace(addr), base: scheme + "://" + hp, hostPort: hp}, nil
}
