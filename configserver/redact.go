package configserver

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/lbd-go/lbd/nodes"
)

// An EtcdConfig and an Etcd backend hold the etcd password, a Config the admin token. Every way
// of printing them hides those: String, GoString (%#v), LogValue (log/slog) and MarshalJSON.

// plainEtcdConfig is EtcdConfig without its methods.
type plainEtcdConfig EtcdConfig

// printed is how an EtcdConfig prints: its settings with a set password replaced by "***";
// the log shows whether a password is set; JSON leaves out TLS and Logger (which are not data).
// Nothing reads an EtcdConfig from JSON.
func (c EtcdConfig) printed() nodes.Printed {
	r := c
	r.Password = nodes.Redact(c.Password)
	return nodes.Printed{
		Name: "configserver.EtcdConfig",
		Text: fmt.Sprintf("configserver.EtcdConfig{Endpoints:%v Prefix:%q Username:%q Password:%q TLS:%v DialTimeout:%v RefreshInterval:%v}",
			c.Endpoints, c.Prefix, c.Username, r.Password, c.TLS != nil, c.DialTimeout, c.RefreshInterval),
		Fields: plainEtcdConfig(r),
		Attrs: []slog.Attr{
			slog.Any("endpoints", c.Endpoints),
			slog.String("prefix", c.Prefix),
			slog.String("user", c.Username),
			slog.Bool("password_set", c.Password != ""),
			slog.Bool("tls", c.TLS != nil),
			slog.Duration("dialTimeout", c.DialTimeout),
			slog.Duration("refreshInterval", c.RefreshInterval),
		},
		NotData: []string{"TLS", "Logger"},
	}
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print an EtcdConfig as printed says.
func (c EtcdConfig) String() string               { return c.printed().String() }
func (c EtcdConfig) GoString() string             { return c.printed().GoString() }
func (c EtcdConfig) LogValue() slog.Value         { return c.printed().LogValue() }
func (c EtcdConfig) MarshalJSON() ([]byte, error) { return c.printed().MarshalJSON() }

// printed is how an Etcd backend prints: by its EtcdConfig, without the password. An Etcd
// holds locks and is used by pointer only.
func (e *Etcd) printed() nodes.Printed {
	return nodes.PrintedAs("configserver.Etcd", e.cfg)
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print an Etcd as printed says.
func (e *Etcd) String() string               { return e.printed().String() }
func (e *Etcd) GoString() string             { return e.printed().GoString() }
func (e *Etcd) LogValue() slog.Value         { return e.printed().LogValue() }
func (e *Etcd) MarshalJSON() ([]byte, error) { return e.printed().MarshalJSON() }

// plainConfig is Config without its methods.
type plainConfig Config

// printed is how a Config prints: its settings with the admin token replaced by "***"; the
// log shows whether a token is set; JSON shows the backend as its own JSON, or its kind.
func (c Config) printed() nodes.Printed {
	p := plainConfig(c)
	p.AdminToken = nodes.Redact(c.AdminToken)
	return nodes.Printed{
		Name: "configserver.Config",
		Text: fmt.Sprintf("configserver.Config{Backend:%v AdminToken:%q AllowRemoteOnlineOffline:%v HideUnknownSchemas:%v ProbeInterval:%v ProbeTimeout:%v ProbeConcurrency:%d DrainWindow:%v ReloadInterval:%v}",
			c.Backend, p.AdminToken, c.AllowRemoteOnlineOffline, c.HideUnknownSchemas, c.ProbeInterval, c.ProbeTimeout, c.ProbeConcurrency, c.DrainWindow, c.ReloadInterval),
		Attrs: []slog.Attr{
			slog.Any("backend", c.Backend),
			slog.Bool("admin_token_set", c.AdminToken != ""),
			slog.Bool("allowRemoteOnlineOffline", c.AllowRemoteOnlineOffline),
			slog.Bool("hideUnknownSchemas", c.HideUnknownSchemas),
			slog.Duration("probeInterval", c.ProbeInterval),
			slog.Duration("probeTimeout", c.ProbeTimeout),
			slog.Int("probeConcurrency", c.ProbeConcurrency),
			slog.Duration("drainWindow", c.DrainWindow),
			slog.Duration("reloadInterval", c.ReloadInterval),
		},
		JSON: struct {
			plainConfig
			Backend any  `json:"Backend,omitempty"` // shadows the interface, printed as its JSON if it has one
			Logger  bool `json:"Logger,omitempty"`
		}{plainConfig: p, Backend: jsonOrKind(c.Backend)},
	}
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a Config as printed says.
func (c Config) String() string               { return c.printed().String() }
func (c Config) GoString() string             { return c.printed().GoString() }
func (c Config) LogValue() slog.Value         { return c.printed().LogValue() }
func (c Config) MarshalJSON() ([]byte, error) { return c.printed().MarshalJSON() }

// jsonOrKind is b itself when it marshals itself (an *Etcd), else its kind.
func jsonOrKind(b Backend) any {
	if b == nil {
		return nil
	}
	if _, ok := b.(json.Marshaler); ok {
		return b
	}
	return b.Kind()
}
