package configserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// An EtcdConfig and an Etcd backend hold the etcd password, a Config the admin token. Every way
// of printing them hides those: String, GoString (%#v), LogValue (log/slog) and MarshalJSON.

// plainEtcdConfig is EtcdConfig without its methods.
type plainEtcdConfig EtcdConfig

func (c EtcdConfig) redacted() plainEtcdConfig {
	c.Password = nodes.Redact(c.Password)
	return plainEtcdConfig(c)
}

// String describes c with the password replaced by "***".
func (c EtcdConfig) String() string {
	return fmt.Sprintf("configserver.EtcdConfig{Endpoints:%v Prefix:%q Username:%q Password:%q TLS:%v DialTimeout:%v RefreshInterval:%v}",
		c.Endpoints, c.Prefix, c.Username, nodes.Redact(c.Password), c.TLS != nil, c.DialTimeout, c.RefreshInterval)
}

// GoString implements fmt.GoStringer (%#v): EtcdConfig's fields with the password replaced.
func (c EtcdConfig) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", c.redacted()), "configserver.plainEtcdConfig", "configserver.EtcdConfig", 1)
}

// LogValue implements slog.LogValuer: the settings, and whether a password is set.
func (c EtcdConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("endpoints", c.Endpoints),
		slog.String("prefix", c.Prefix),
		slog.String("user", c.Username),
		slog.Bool("password_set", c.Password != ""),
		slog.Bool("tls", c.TLS != nil),
		slog.Duration("dialTimeout", c.DialTimeout),
		slog.Duration("refreshInterval", c.RefreshInterval),
	)
}

// MarshalJSON implements json.Marshaler: EtcdConfig's fields with the password replaced,
// without TLS and Logger (which are not data). Nothing reads an EtcdConfig from JSON.
func (c EtcdConfig) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		plainEtcdConfig
		// These shadow the embedded fields of the same names, which JSON cannot carry.
		TLS    bool `json:"TLS,omitempty"`
		Logger bool `json:"Logger,omitempty"`
	}{plainEtcdConfig: c.redacted(), TLS: c.TLS != nil})
}

// String describes the backend by its EtcdConfig, without the password. An Etcd holds locks
// and is used by pointer only.
func (e *Etcd) String() string { return "configserver.Etcd{" + e.cfg.String() + "}" }

// GoString implements fmt.GoStringer (%#v) as String does.
func (e *Etcd) GoString() string { return e.String() }

// LogValue implements slog.LogValuer: the backend's EtcdConfig, without the password.
func (e *Etcd) LogValue() slog.Value { return slog.GroupValue(slog.Any("config", e.cfg)) }

// MarshalJSON implements json.Marshaler: the backend's EtcdConfig, without the password.
func (e *Etcd) MarshalJSON() ([]byte, error) { return json.Marshal(e.cfg) }

// plainConfig is Config without its methods.
type plainConfig Config

// String describes c with the admin token replaced by "***".
func (c Config) String() string {
	return fmt.Sprintf("configserver.Config{Backend:%v AdminToken:%q AllowRemoteOnlineOffline:%v HideUnknownSchemas:%v ProbeInterval:%v ProbeTimeout:%v ProbeConcurrency:%d DrainWindow:%v ReloadInterval:%v}",
		c.Backend, nodes.Redact(c.AdminToken), c.AllowRemoteOnlineOffline, c.HideUnknownSchemas, c.ProbeInterval, c.ProbeTimeout, c.ProbeConcurrency, c.DrainWindow, c.ReloadInterval)
}

// GoString implements fmt.GoStringer (%#v) as String does.
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer: the settings, and whether an admin token is set.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("backend", c.Backend),
		slog.Bool("admin_token_set", c.AdminToken != ""),
		slog.Bool("allowRemoteOnlineOffline", c.AllowRemoteOnlineOffline),
		slog.Bool("hideUnknownSchemas", c.HideUnknownSchemas),
		slog.Duration("probeInterval", c.ProbeInterval),
		slog.Duration("probeTimeout", c.ProbeTimeout),
		slog.Int("probeConcurrency", c.ProbeConcurrency),
		slog.Duration("drainWindow", c.DrainWindow),
		slog.Duration("reloadInterval", c.ReloadInterval),
	)
}

// MarshalJSON implements json.Marshaler: Config's settings with the admin token replaced.
func (c Config) MarshalJSON() ([]byte, error) {
	p := plainConfig(c)
	p.AdminToken = nodes.Redact(p.AdminToken)
	return json.Marshal(struct {
		plainConfig
		Backend any  `json:"Backend,omitempty"` // shadows the interface, printed as its JSON if it has one
		Logger  bool `json:"Logger,omitempty"`
	}{plainConfig: p, Backend: jsonOrKind(c.Backend)})
}

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
