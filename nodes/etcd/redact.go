package etcd

import (
	"fmt"
	"log/slog"

	"github.com/lbd-go/lbd/nodes"
)

// A Config and a Source hold the etcd password. Every way of printing them hides it: String,
// GoString (%#v), LogValue (log/slog) and MarshalJSON.

// plainConfig is Config without its methods.
type plainConfig Config

// printed is how a Config prints: its settings with a set password replaced by "***"; the
// log shows whether a password is set; JSON leaves out TLS, Logger and Clock (which are not
// data). Nothing reads a Config from JSON.
func (c Config) printed() nodes.Printed {
	r := c
	r.Password = nodes.Redact(c.Password)
	return nodes.Printed{
		Name: "etcd.Config",
		Text: fmt.Sprintf("etcd.Config{Endpoints:%v Key:%q Schema:%q Username:%q Password:%q TLS:%v DialTimeout:%v RefreshInterval:%v}",
			r.Endpoints, r.Key, r.Schema, r.Username, r.Password, r.TLS != nil, r.DialTimeout, r.RefreshInterval),
		Fields: plainConfig(r),
		Attrs: []slog.Attr{
			slog.Any("endpoints", c.Endpoints),
			slog.String("key", c.Key),
			slog.String("schema", c.Schema),
			slog.String("username", c.Username),
			slog.Bool("password_set", c.Password != ""),
			slog.Bool("tls", c.TLS != nil),
			slog.Duration("dial_timeout", c.DialTimeout),
			slog.Duration("refresh_interval", c.RefreshInterval),
		},
		JSON: struct {
			plainConfig
			// These shadow the embedded fields of the same names, which JSON cannot carry.
			TLS    bool `json:"TLS,omitempty"`
			Logger bool `json:"Logger,omitempty"`
			Clock  bool `json:"Clock,omitempty"`
		}{plainConfig: plainConfig(r), TLS: c.TLS != nil},
	}
}

// String describes c with the password replaced by "***".
func (c Config) String() string { return c.printed().String() }

// GoString implements fmt.GoStringer (%#v): Config's fields with the password replaced.
func (c Config) GoString() string { return c.printed().GoString() }

// LogValue implements slog.LogValuer: the settings, and whether a password is set.
func (c Config) LogValue() slog.Value { return c.printed().LogValue() }

// MarshalJSON implements json.Marshaler: Config's fields with the password replaced.
func (c Config) MarshalJSON() ([]byte, error) { return c.printed().MarshalJSON() }

// printed is how a Source prints: by its Config, without the password. A Source holds locks
// and is used by pointer only.
func (s *Source) printed() nodes.Printed {
	return nodes.Printed{Name: "etcd.Source", Text: "etcd.Source{" + s.cfg.String() + "}",
		Attrs: []slog.Attr{slog.Any("config", s.cfg)}, JSON: s.cfg}
}

// String describes the source by its Config, without the password.
func (s *Source) String() string { return s.printed().String() }

// GoString implements fmt.GoStringer (%#v) as String does.
func (s *Source) GoString() string { return s.printed().GoString() }

// LogValue implements slog.LogValuer: the source's Config, without the password.
func (s *Source) LogValue() slog.Value { return s.printed().LogValue() }

// MarshalJSON implements json.Marshaler: the source's Config, without the password.
func (s *Source) MarshalJSON() ([]byte, error) { return s.printed().MarshalJSON() }
