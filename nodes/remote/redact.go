package remote

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// Config.String and Config.LogValue (config.go) hide the API key; so do the methods here, for
// every other way a Config, a Source or the client inside it may be printed.

// plainConfig is Config without its methods.
type plainConfig Config

// GoString implements fmt.GoStringer (%#v): Config's fields with the API key replaced by "***".
func (c Config) GoString() string {
	c.APIKey = nodes.Redact(c.APIKey)
	return strings.Replace(fmt.Sprintf("%#v", plainConfig(c)), "remote.plainConfig", "remote.Config", 1)
}

// MarshalJSON implements json.Marshaler: Config's fields with the API key replaced by "***",
// without TLS, Logger and Clock (which are not data). Nothing reads a Config from JSON.
func (c Config) MarshalJSON() ([]byte, error) {
	c.APIKey = nodes.Redact(c.APIKey)
	return json.Marshal(struct {
		plainConfig
		// These shadow the embedded fields of the same names, which JSON cannot carry.
		TLS    bool `json:"TLS,omitempty"`
		Logger bool `json:"Logger,omitempty"`
		Clock  bool `json:"Clock,omitempty"`
	}{plainConfig: plainConfig(c), TLS: c.TLS != nil})
}

// String describes the source by its Config, without the API key. A Source holds locks and is
// used by pointer only.
func (s *Source) String() string { return "remote.Source{" + s.s.Config.String() + "}" }

// GoString implements fmt.GoStringer (%#v) as String does.
func (s *Source) GoString() string { return s.String() }

// LogValue implements slog.LogValuer: the source's Config, without the API key, and whether it
// has fallen back to the default set.
func (s *Source) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("config", s.s.Config), slog.Bool("degraded", s.Degraded()))
}

// MarshalJSON implements json.Marshaler: the source's Config, without the API key.
func (s *Source) MarshalJSON() ([]byte, error) { return json.Marshal(s.s.Config) }

// String describes the client without its API key.
func (c client) String() string {
	return fmt.Sprintf("remote.client{schema:%q apiKey:%q az:%q ip:%q timeout:%v}", c.schema, nodes.Redact(c.apiKey), c.az, c.ip, c.timeout)
}

// GoString is String, for %#v.
func (c client) GoString() string { return c.String() }
