package remote

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/lbd-go/lbd/nodes"
)

// Defaults of Config, also those of the DSN parameters.
const (
	DefaultTimeout           = 5 * time.Second        // configServerTimeout (5000 ms), as in lb-driver
	DefaultPollInterval      = 5 * time.Second        // configServerPollIntervalSeconds, lb-driver's fixed period
	DefaultAZRefreshInterval = 30 * time.Second       // azRefreshIntervalSeconds
	DefaultRecoverCheckCount = 2                      // good probes of an AZ node that end a fallback
	DefaultHealthTick        = 500 * time.Millisecond // how often node health is looked at
)

// Environment variables that override Config.AZ and Config.IP on one machine, so that many
// machines can share one DSN. A variable that is set but empty clears the value ("not
// configured"); an unset variable leaves it alone.
const (
	EnvAZ = "LBD_AZ"
	EnvIP = "LBD_IP"
)

// Config describes a config-server source for New. Only Servers and Schema are required.
type Config struct {
	// Servers are the config-server addresses, tried in turn: "host:port", "[v6addr]:port" or
	// "host" (port 80). Port 443 is spoken to over https, any other port over http, as in
	// lb-driver. In code (not in a DSN) an address may also start with "http://" or "https://"
	// to choose the scheme; the port then defaults to 80 or 443. At least one is required.
	Servers []string
	// Schema is the schema whose proxy list is asked for (the schema query parameter).
	// Required; surrounding space is trimmed; at most 256 bytes, no control character.
	Schema string
	// APIKey, when not "", is sent as "Authorization: Bearer <APIKey>". It never appears in
	// errors, log lines or the disk cache. It must be visible ASCII (no space, control or
	// non-ASCII character): New refuses a key with surrounding spaces rather than trim it,
	// since such a key, sent as is, could never match.
	APIKey string
	// Timeout bounds each request to one config-server as a whole: connecting, sending and
	// reading the answer. Zero means DefaultTimeout (5 s).
	Timeout time.Duration
	// PollInterval is the time between two polls of the list. Zero means DefaultPollInterval
	// (5 s). While the source has fallen back to the default set (see the package
	// documentation), the default set is polled at this interval.
	PollInterval time.Duration

	// CacheDir is the directory of the disk cache that lets an application start while every
	// config-server is down. "" means DefaultCacheDir(); DisableCache turns the cache off.
	CacheDir string
	// DisableCache turns the disk cache off: nothing is read or written.
	DisableCache bool

	// AZ is the client's availability zone, sent as the az query parameter (at most 256 bytes,
	// no control character); "" lets the
	// config-server find the zone from the client's IP. The environment variable LBD_AZ, when
	// set, replaces it (an empty value clears it).
	AZ string
	// IP is the client address reported to the config-server (the ip query parameter). ""
	// means the local address of the client's connection to a config-server, found once and
	// remembered. The environment variable LBD_IP, when set, replaces it (an empty value
	// clears it). It must be an IPv4 or IPv6 address.
	IP string
	// AZRefreshInterval is how often the AZ set is polled while the source has fallen back to
	// the default set, and how long the source waits before trying again to find its local
	// address after a failure. Zero means DefaultAZRefreshInterval (30 s).
	AZRefreshInterval time.Duration
	// RecoverCheckCount is how many consecutive good probes one node of the AZ set needs
	// before the source returns from the default set to the AZ set. It is capped at 2 while
	// the default set has not arrived. Zero means DefaultRecoverCheckCount (2).
	RecoverCheckCount int
	// HealthTick is how often the source looks at its nodes' health (only when used by a
	// Connector, which shares it through nodes.HealthAware). Zero means DefaultHealthTick
	// (500 ms).
	HealthTick time.Duration

	// TLS configures https config-servers. Nil means the system roots and the server's host
	// name. It is cloned, not kept.
	TLS *tls.Config
	// Logger receives the source's changes of condition. Nil means slog.Default().
	Logger *slog.Logger
	// Clock schedules polls and health checks. Nil means the wall clock.
	Clock nodes.Clock
}

// DefaultCacheDir is the directory the disk cache uses when Config.CacheDir is "": "lbd" in
// the user's cache directory (os.UserCacheDir, e.g. $XDG_CACHE_HOME or ~/.cache on Linux). It
// returns an error when the user has no cache directory.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "lbd"), nil
}

// settings is a Config with its defaults filled in and its servers parsed.
type settings struct {
	Config
	servers  []server
	cacheDir string // "" when the cache is off
	cacheErr error  // why the default cache directory could not be used, if it could not
}

// withDefaults applies the environment overrides, checks c and fills in its defaults. Errors
// name Config's fields and never show the API key.
func (c Config) withDefaults() (settings, error) {
	s := settings{Config: c}
	if len(c.Servers) == 0 {
		return s, errors.New("remote: Config.Servers lists no config-server")
	}
	seen := map[string]bool{}
	for _, a := range c.Servers {
		srv, err := parseServer(a, true)
		if err != nil {
			return s, fmt.Errorf("remote: Config.Servers: %v", err)
		}
		if seen[srv.base] {
			return s, fmt.Errorf("remote: Config.Servers: %q is listed twice", a)
		}
		seen[srv.base] = true
		s.servers = append(s.servers, srv)
	}
	s.Servers = append([]string(nil), c.Servers...)
	s.Schema = strings.TrimSpace(c.Schema)
	if s.Schema == "" {
		return s, errors.New("remote: Config.Schema is empty: name the schema whose proxy list to fetch")
	}
	if err := checkText("Config.Schema (configServerSchema)", s.Schema); err != nil {
		return s, err
	}
	if err := checkAPIKey(c.APIKey); err != nil {
		return s, err
	}
	if v, ok := os.LookupEnv(EnvAZ); ok {
		s.AZ = v
	}
	if v, ok := os.LookupEnv(EnvIP); ok {
		s.IP = v
	}
	s.AZ = strings.TrimSpace(s.AZ)
	s.IP = strings.TrimSpace(s.IP)
	if err := checkText("the AZ (Config.AZ, the DSN's az or "+EnvAZ+")", s.AZ); err != nil {
		return s, err
	}
	if s.IP != "" {
		if _, err := netip.ParseAddr(s.IP); err != nil {
			return s, fmt.Errorf("remote: the client IP %q (Config.IP, the DSN's ip or %s) is not an IP address", s.IP, EnvIP)
		}
	}
	var err error
	if s.Timeout, err = orDefault("Timeout", c.Timeout, DefaultTimeout); err != nil {
		return s, err
	}
	if s.PollInterval, err = orDefault("PollInterval", c.PollInterval, DefaultPollInterval); err != nil {
		return s, err
	}
	if s.AZRefreshInterval, err = orDefault("AZRefreshInterval", c.AZRefreshInterval, DefaultAZRefreshInterval); err != nil {
		return s, err
	}
	if s.HealthTick, err = orDefault("HealthTick", c.HealthTick, DefaultHealthTick); err != nil {
		return s, err
	}
	switch {
	case c.RecoverCheckCount < 0:
		return s, fmt.Errorf("remote: Config.RecoverCheckCount %d is negative", c.RecoverCheckCount)
	case c.RecoverCheckCount == 0:
		s.RecoverCheckCount = DefaultRecoverCheckCount
	}
	switch {
	case c.DisableCache:
	case c.CacheDir != "":
		s.cacheDir = c.CacheDir
	default:
		s.cacheDir, s.cacheErr = DefaultCacheDir()
	}
	if c.TLS != nil {
		s.TLS = c.TLS.Clone()
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if s.Clock == nil {
		s.Clock = nodes.RealClock
	}
	return s, nil
}

// maxText bounds the free text a request carries (schema, AZ), so that no setting makes a
// request that a config-server refuses as too long.
const maxText = 256

func checkText(what, v string) error {
	if len(v) > maxText {
		return fmt.Errorf("remote: %s is %d bytes long, more than %d", what, len(v), maxText)
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return fmt.Errorf("remote: %s %q has a control character at byte %d", what, v, i)
	}
	return nil
}

// checkAPIKey refuses a key that can never match: the key is sent byte for byte in the
// Authorization header, whose value must be visible ASCII. The error does not show the key.
func checkAPIKey(k string) error {
	const what = "remote: Config.APIKey (the DSN's configServerApiKey)"
	if len(k) > 4096 {
		return fmt.Errorf("%s is %d bytes long, more than 4096", what, len(k))
	}
	if strings.TrimSpace(k) != k {
		return fmt.Errorf("%s starts or ends with a space: remove it, the key is sent as is and would never match", what)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("%s has a space, control or non-ASCII character at byte %d: an API key is visible ASCII", what, i)
		}
	}
	return nil
}

func orDefault(name string, d, def time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("remote: Config.%s %v is negative", name, d)
	case d == 0:
		return def, nil
	}
	return d, nil
}
