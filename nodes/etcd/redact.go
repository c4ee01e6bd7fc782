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
		NotData: []string{"TLS", "Logger", "Clock"},
	}
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a Config as printed says.
func (c Config) String() string               { return c.printed().String() }
func (c Config) GoString() string             { return c.printed().GoString() }
func (c Config) LogValue() slog.Value         { return c.printed().LogValue() }
func (c Config) MarshalJSON() ([]byte, error) { return c.printed().MarshalJSON() }

// printed is how a Source prints: by its Config, without the password. A Source holds locks
// and is used by pointer only.
func (s *Source) printed() nodes.Printed {
	return nodes.PrintedAs("etcd.Source", s.cfg)
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a Source as printed says.
func (s *Source) String() string               { return s.printed().String() }
func (s *Source) GoString() string             { return s.printed().GoString() }
func (s *Source) LogValue() slog.Value         { return s.printed().LogValue() }
func (s *Source) MarshalJSON() ([]byte, error) { return s.printed().MarshalJSON() }
