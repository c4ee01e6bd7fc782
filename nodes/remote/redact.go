package remote

import (
	"fmt"
	"log/slog"

	"github.com/lbd-go/lbd/nodes"
)

// A Config, a Source and the client inside it hold the API key. Every way of printing them
// hides it: String, GoString (%#v), LogValue (log/slog) and MarshalJSON.

// plainConfig is Config without its methods.
type plainConfig Config

// printed is how a Config prints: its settings with the API key replaced by "***"; the log
// shows whether a key is set; JSON leaves out TLS, Logger and Clock (which are not data).
// Nothing reads a Config from JSON.
func (c Config) printed() nodes.Printed {
	r := c
	r.APIKey = nodes.Redact(c.APIKey)
	return nodes.Printed{
		Name: "remote.Config",
		Text: fmt.Sprintf("remote.Config{Servers:%v Schema:%q APIKey:%q Timeout:%v PollInterval:%v CacheDir:%q DisableCache:%v "+
			"AZ:%q IP:%q AZRefreshInterval:%v RecoverCheckCount:%d HealthTick:%v}",
			c.Servers, c.Schema, r.APIKey, c.Timeout, c.PollInterval, c.CacheDir, c.DisableCache,
			c.AZ, c.IP, c.AZRefreshInterval, c.RecoverCheckCount, c.HealthTick),
		Fields: plainConfig(r),
		Attrs: []slog.Attr{
			slog.Any("servers", c.Servers),
			slog.String("schema", c.Schema),
			slog.Bool("api_key_set", c.APIKey != ""),
			slog.Duration("timeout", c.Timeout),
			slog.Duration("poll_interval", c.PollInterval),
			slog.String("cache_dir", c.CacheDir),
			slog.Bool("disable_cache", c.DisableCache),
			slog.String("az", c.AZ),
			slog.String("ip", c.IP),
			slog.Duration("az_refresh_interval", c.AZRefreshInterval),
			slog.Int("recover_check_count", c.RecoverCheckCount),
			slog.Duration("health_tick", c.HealthTick),
		},
		NotData: []string{"TLS", "Logger", "Clock"},
	}
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a Config as printed says.
func (c Config) String() string               { return c.printed().String() }
func (c Config) GoString() string             { return c.printed().GoString() }
func (c Config) LogValue() slog.Value         { return c.printed().LogValue() }
func (c Config) MarshalJSON() ([]byte, error) { return c.printed().MarshalJSON() }

// printed is how a Source prints: by its Config, without the API key, and (in logs) whether it
// has fallen back to the default set. A Source holds locks and is used by pointer only.
func (s *Source) printed() nodes.Printed {
	return nodes.PrintedAs("remote.Source", s.s.Config, slog.Bool("degraded", s.Degraded()))
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a Source as printed says.
func (s *Source) String() string               { return s.printed().String() }
func (s *Source) GoString() string             { return s.printed().GoString() }
func (s *Source) LogValue() slog.Value         { return s.printed().LogValue() }
func (s *Source) MarshalJSON() ([]byte, error) { return s.printed().MarshalJSON() }

// String describes the client without its API key.
func (c client) String() string {
	return fmt.Sprintf("remote.client{schema:%q apiKey:%q az:%q ip:%q timeout:%v}", c.schema, nodes.Redact(c.apiKey), c.az, c.ip, c.timeout)
}

// GoString is String, for %#v.
func (c client) GoString() string { return c.String() }
