package etcd

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// A Config and a Source hold the etcd password. Every way of printing them hides it: String,
// GoString (%#v), LogValue (log/slog) and MarshalJSON.

// plainConfig is Config without its methods.
type plainConfig Config

// redacted is c with a set password replaced by "***".
func (c Config) redacted() plainConfig {
	c.Password = nodes.Redact(c.Password)
	return plainConfig(c)
}

// String describes c with the password replaced by "***".
func (c Config) String() string {
	r := c.redacted()
	return fmt.Sprintf("etcd.Config{Endpoints:%v Key:%q Schema:%q Username:%q Password:%q TLS:%v DialTimeout:%v RefreshInterval:%v}",
		r.Endpoints, r.Key, r.Schema, r.Username, r.Password, r.TLS != nil, r.DialTimeout, r.RefreshInterval)
}

// GoString implements fmt.GoStringer (%#v): Config's fields with the password replaced.
func (c Config) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", c.redacted()), "etcd.plainConfig", "etcd.Config", 1)
}

// LogValue implements slog.LogValuer: the settings, and whether a password is set.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("endpoints", c.Endpoints),
		slog.String("key", c.Key),
		slog.String("schema", c.Schema),
		slog.String("username", c.Username),
		slog.Bool("password_set", c.Password != ""),
		slog.Bool("tls", c.TLS != nil),
		slog.Duration("dial_timeout", c.DialTimeout),
		slog.Duration("refresh_interval", c.RefreshInterval),
	)
}

// MarshalJSON implements json.Marshaler: Config's fields with the password replaced, without
// TLS, Logger and Clock (which are not data). Nothing reads a Config from JSON.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		plainConfig
		// These shadow the embedded fields of the same names, which JSON cannot carry.
		TLS    bool `json:"TLS,omitempty"`
		Logger bool `json:"Logger,omitempty"`
		Clock  bool `json:"Clock,omitempty"`
	}{plainConfig: c.redacted(), TLS: c.TLS != nil})
}

// String describes the source by its Config, without the password. A Source holds locks and
// is used by pointer only.
func (s *Source) String() string { return "etcd.Source{" + s.cfg.String() + "}" }

// GoString implements fmt.GoStringer (%#v) as String does.
func (s *Source) GoString() string { return s.String() }

// LogValue implements slog.LogValuer: the source's Config, without the password.
func (s *Source) LogValue() slog.Value { return slog.GroupValue(slog.Any("config", s.cfg)) }

// MarshalJSON implements json.Marshaler: the source's Config, without the password.
func (s *Source) MarshalJSON() ([]byte, error) { return json.Marshal(s.cfg) }
