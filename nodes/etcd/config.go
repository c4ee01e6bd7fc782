package etcd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// Defaults of Config's durations, also those of the DSN parameters.
const (
	DefaultDialTimeout     = 5 * time.Second  // etcdDialTimeoutMillis
	DefaultRefreshInterval = 60 * time.Second // etcdRefreshIntervalSeconds
)

// Config describes an etcd source for New.
type Config struct {
	// Endpoints are the etcd members, "host:port", "http://host:port" or "https://host:port".
	// At least one is required; http:// and https:// do not mix.
	Endpoints []string
	// Key is the etcd key holding the schema's document, e.g. "/lbd/schemas/im_user". Required;
	// it must not end with '/'.
	Key string
	// Schema is the schema the document must name. "" means the last '/'-separated element of
	// Key, as lb-driver's config-server lays keys out.
	Schema string
	// Username and Password authenticate to etcd; both or neither. Password is never logged.
	Username, Password string
	// TLS, when not nil, makes the client speak TLS to "host:port" and https:// endpoints. An
	// https:// endpoint uses TLS with the system roots when TLS is nil. It must be nil with
	// http:// endpoints.
	TLS *tls.Config
	// DialTimeout bounds connecting (with authentication) and each read of the key. Zero means
	// DefaultDialTimeout (5 s).
	DialTimeout time.Duration
	// RefreshInterval is the time between full reads of the key, which back up the watch. Zero
	// means DefaultRefreshInterval (60 s).
	RefreshInterval time.Duration
	// Logger receives the source's condition changes. Nil means slog.Default().
	Logger *slog.Logger
	// Clock schedules the full reads and watch retries. Nil means the wall clock.
	Clock nodes.Clock
}

// endpointScheme splits an endpoint into its scheme ("", "http" or "https") and "host:port".
func endpointScheme(ep string) (scheme, hostPort string) {
	for _, s := range []string{"http", "https"} {
		if rest, ok := strings.CutPrefix(ep, s+"://"); ok {
			return s, strings.TrimSuffix(rest, "/")
		}
	}
	return "", ep
}

// checkEndpoints reports the first endpoint that is not host:port with an optional http:// or
// https:// scheme, a mix of both schemes, or TLS asked for with http://.
func checkEndpoints(eps []string, withTLS bool) error {
	if len(eps) == 0 {
		return errors.New("no endpoint")
	}
	schemes := map[string]bool{}
	for _, ep := range eps {
		scheme, hp := endpointScheme(ep)
		if err := nodes.CheckAddr(hp); err != nil {
			return fmt.Errorf("endpoint %q: want host:port, http://host:port or https://host:port", ep)
		}
		schemes[scheme] = true
	}
	if schemes["http"] && schemes["https"] {
		return errors.New("http:// and https:// endpoints do not mix")
	}
	if schemes["http"] && withTLS {
		return errors.New("TLS is asked for but the endpoints say http://")
	}
	return nil
}

// checkKey reports why key cannot hold a schema's document.
func checkKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return errors.New("is empty")
	case strings.HasSuffix(key, "/"):
		return errors.New("ends with '/': it must name the schema's key, not a prefix")
	}
	return nil
}

// schemaOf is the key's last '/'-separated element.
func schemaOf(key string) string {
	return key[strings.LastIndexByte(key, '/')+1:]
}

// checkAuth reports a user without a password or the reverse, never showing either value.
func checkAuth(user, password string) error {
	switch {
	case user != "" && password == "":
		return errors.New("a user needs a password")
	case user == "" && password != "":
		return errors.New("a password needs a user")
	}
	return nil
}

// withDefaults checks c and fills in its defaults. Errors name Config's fields.
func (c Config) withDefaults() (Config, error) {
	if err := checkEndpoints(c.Endpoints, c.TLS != nil); err != nil {
		return c, fmt.Errorf("etcd: Config.Endpoints: %v", err)
	}
	c.Endpoints = append([]string(nil), c.Endpoints...)
	if err := checkKey(c.Key); err != nil {
		return c, fmt.Errorf("etcd: Config.Key %q %v", c.Key, err)
	}
	if c.Schema == "" {
		c.Schema = schemaOf(c.Key)
	}
	if err := checkAuth(c.Username, c.Password); err != nil {
		return c, fmt.Errorf("etcd: Config.Username/Password: %v", err)
	}
	switch {
	case c.DialTimeout < 0:
		return c, fmt.Errorf("etcd: Config.DialTimeout %v is negative", c.DialTimeout)
	case c.DialTimeout == 0:
		c.DialTimeout = DefaultDialTimeout
	}
	switch {
	case c.RefreshInterval < 0:
		return c, fmt.Errorf("etcd: Config.RefreshInterval %v is negative", c.RefreshInterval)
	case c.RefreshInterval == 0:
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = nodes.RealClock
	}
	return c, nil
}
