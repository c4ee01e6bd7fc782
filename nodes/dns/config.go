package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// Defaults of Config's durations, also those of the DSN parameters.
const (
	DefaultRefreshInterval = 10 * time.Second // dnsRefreshIntervalSeconds
	DefaultTimeout         = 2 * time.Second  // dnsTimeoutMillis
)

// Resolver answers the source's lookups. *net.Resolver satisfies it; tests and programs with
// their own service discovery can supply another. It must be safe for concurrent use, and
// return soon after ctx is done: ctx carries the lookup timeout (Config.Timeout) and ends at
// Close, which waits for the lookup in flight. Its answers are checked as a DNS server's are
// (see the package documentation).
type Resolver interface {
	// LookupIPAddr returns the IPv4 and IPv6 addresses of host.
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
	// LookupSRV returns the SRV records of a name; the source passes "" for service and proto
	// and the whole "_service._proto.name" as name.
	LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error)
}

// Config describes a DNS source for New.
type Config struct {
	// Names are the entries to resolve, as in the package documentation: "host:port" for A and
	// AAAA records, "_service._proto.name" for SRV records. At least one is required.
	Names []string
	// Resolver answers the lookups. Nil means a resolver that asks Server, or the system
	// resolver (net.DefaultResolver) when Server is "".
	Resolver Resolver
	// Server is the "host:port" of a DNS server to ask instead of the system resolver, over
	// UDP and TCP (port 53 when omitted). It must be "" when Resolver is set.
	Server string
	// Timeout bounds each lookup. Zero means DefaultTimeout (2 s).
	Timeout time.Duration
	// RefreshInterval is the time between rounds of lookups. Zero means DefaultRefreshInterval
	// (10 s).
	RefreshInterval time.Duration
	// Logger receives the source's condition changes. Nil means slog.Default().
	Logger *slog.Logger
	// Clock schedules the rounds. Nil means the wall clock.
	Clock nodes.Clock
}

// entry is one parsed name.
type entry struct {
	name string // as written: "host:port" or "_service._proto.name"
	host string // the host to look up, for A/AAAA
	port uint16 // for A/AAAA
	srv  bool
	zone string // written "name~zone": the zone of every node the name gives; "" when none
	// groups, written "name+group" (before any ~zone): the groups of every node the name gives,
	// as nodes.Node.Groups spells them; "" when none
	groups string
}

// parseEntry reads one name; errors say what is wrong with it, the caller says where it is.
func parseEntry(raw string) (entry, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return entry{}, errors.New("is empty")
	}
	raw, zone, hasZone := strings.Cut(raw, string(nodes.ZoneSep))
	if hasZone {
		if err := nodes.CheckZone(zone); err != nil {
			return entry{}, fmt.Errorf("has a bad zone after %q: %s", nodes.ZoneSep, strings.TrimPrefix(err.Error(), "nodes: "))
		}
		e, err := parseEntry(raw)
		e.zone = zone
		return e, err
	}
	raw, groups, hasGroups := strings.Cut(raw, string(nodes.GroupSep))
	if hasGroups {
		check := nodes.CheckGroups
		if groups == "" {
			check = nodes.CheckGroup
		}
		if err := check(groups); err != nil {
			return entry{}, fmt.Errorf("has bad groups after %q: %s", nodes.GroupSep, strings.TrimPrefix(err.Error(), "nodes: "))
		}
		e, err := parseEntry(raw)
		e.groups = nodes.JoinGroups(nodes.SplitGroups(groups)...)
		return e, err
	}
	host, port, err := net.SplitHostPort(raw)
	if err != nil {
		if strings.HasPrefix(raw, "_") && !strings.ContainsAny(raw, ":[]") {
			if !strings.Contains(strings.TrimSuffix(raw, "."), ".") {
				return entry{}, errors.New("is not an SRV name: want _service._proto.name")
			}
			return entry{name: raw, srv: true}, nil
		}
		return entry{}, errors.New("has no port: want host:port for A/AAAA records, or _service._proto.name for SRV records")
	}
	if strings.HasPrefix(host, "_") {
		return entry{}, errors.New("looks like an SRV name, which carries its own ports: drop the :port")
	}
	if strings.TrimSpace(host) == "" {
		return entry{}, errors.New("has no host")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return entry{}, fmt.Errorf("has port %q, want a number from 1 to 65535", port)
	}
	return entry{name: raw, host: host, port: uint16(n)}, nil
}

// serverAddr completes a DNS server address with port 53 when it has none.
func serverAddr(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("is empty")
	}
	if host, port, err := net.SplitHostPort(s); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
			return "", errors.New("want host:port with a port from 1 to 65535")
		}
		return s, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return netip.AddrPortFrom(a, 53).String(), nil
	}
	if strings.ContainsAny(s, ":[]/ ") {
		return "", errors.New("want host or host:port")
	}
	return net.JoinHostPort(s, "53"), nil
}

// serverResolver is a Go resolver that sends every query to addr, whatever servers the system
// configuration lists.
func serverResolver(addr string) *net.Resolver {
	var d net.Dialer
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// When a lookup is abandoned (its timeout passed, or the source closed), the
			// resolver cancels ctx, but a read already waiting for the answer would only give up
			// at the resolver's own deadline, seconds later. End it now; after a normal
			// exchange the connection is closed and this does nothing.
			context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
			return c, nil
		},
	}
}

// withDefaults checks c and fills in its defaults; it returns the parsed names. Errors name
// Config's fields.
func (c Config) withDefaults() (Config, []entry, error) {
	if len(c.Names) == 0 {
		return c, nil, errors.New("dns: Config.Names is empty")
	}
	entries := make([]entry, 0, len(c.Names))
	for _, raw := range c.Names {
		e, err := parseEntry(raw)
		if err != nil {
			return c, nil, fmt.Errorf("dns: Config.Names: %q %v", raw, err)
		}
		entries = append(entries, e)
	}
	c.Names = append([]string(nil), c.Names...)
	switch {
	case c.Resolver != nil && c.Server != "":
		return c, nil, errors.New("dns: Config.Resolver and Config.Server are both set")
	case c.Server != "":
		addr, err := serverAddr(c.Server)
		if err != nil {
			return c, nil, fmt.Errorf("dns: Config.Server %q: %v", c.Server, err)
		}
		c.Server, c.Resolver = addr, serverResolver(addr)
	case c.Resolver == nil:
		c.Resolver = net.DefaultResolver
	}
	switch {
	case c.Timeout < 0:
		return c, nil, fmt.Errorf("dns: Config.Timeout %v is negative", c.Timeout)
	case c.Timeout == 0:
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.RefreshInterval < 0:
		return c, nil, fmt.Errorf("dns: Config.RefreshInterval %v is negative", c.RefreshInterval)
	case c.RefreshInterval == 0:
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = nodes.RealClock
	}
	return c, entries, nil
}
