package lbd

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
)

// redacted replaces a secret in everything lbd prints.
const redacted = "***"

// A Config, a SourceConfig and a Connector hold the DSN's password and a node source's secret
// parameters (SourceFactory.Secrets). Every way of printing them hides those: String, GoString
// (%#v), LogValue (log/slog) and MarshalJSON. Config and SourceConfig have value receivers, so
// that a value prints like a pointer; a Connector holds locks and is only used by pointer.

// String returns the DSN with the password, and the values of a source's secret parameters,
// replaced by "***", for logs and error messages.
func (c Config) String() string {
	if c.MySQL == nil {
		return ""
	}
	red := c.redacted()
	return red.FormatDSN()
}

// redacted is a copy of c with its secrets replaced.
func (c Config) redacted() Config {
	if c.MySQL != nil {
		c.MySQL = c.MySQL.Clone()
		if c.MySQL.Passwd != "" {
			c.MySQL.Passwd = redacted
		}
	}
	c.SourceParams = redactParams(c.Network, c.SourceParams)
	return c
}

// plainConfig is Config without its methods, for GoString.
type plainConfig Config

// GoString implements fmt.GoStringer (%#v): the fields, with the source's secret parameters
// replaced and the go-sql-driver settings shown as a pointer (String shows them without the
// password).
func (c Config) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", plainConfig(c.redacted())), "lbd.plainConfig", "lbd.Config", 1)
}

// LogValue implements slog.LogValuer: the DSN as String writes it.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON implements json.Marshaler: a JSON string holding the DSN as String writes it.
// Nothing in lbd reads a Config from JSON; ParseDSN reads the DSN.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }

// redactParams returns params with the values of network's secret parameters replaced: those
// its SourceFactory lists as Secrets and, for a network that is not registered, any whose name
// says it is one (password, key, secret, token).
func redactParams(network string, params map[string]string) map[string]string {
	if len(params) == 0 {
		return params
	}
	f, registered := lookupSource(network)
	out := maps.Clone(params)
	for k, v := range out {
		secret := false
		for _, s := range f.Secrets {
			secret = secret || s == k
		}
		if !registered || secret {
			secret = secret || looksSecret(k)
		}
		if secret && v != "" {
			out[k] = redacted
		}
	}
	return out
}

// looksSecret reports a parameter name that says it holds a secret.
func looksSecret(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"password", "passwd", "apikey", "api_key", "secret", "token", "credential"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// plainSourceConfig is SourceConfig without its methods, for GoString.
type plainSourceConfig SourceConfig

func (sc SourceConfig) redacted() SourceConfig {
	sc.Params = redactParams(sc.Network, sc.Params)
	return sc
}

// String shows the network, the addresses and the parameters, with the source's secret
// parameters replaced by "***".
func (sc SourceConfig) String() string {
	r := sc.redacted()
	return fmt.Sprintf("lbd.SourceConfig{Network:%q Addrs:%q Params:%v RecoverCheckCount:%d}", r.Network, r.Addrs, r.Params, r.RecoverCheckCount)
}

// GoString implements fmt.GoStringer (%#v), with the secret parameters replaced.
func (sc SourceConfig) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", plainSourceConfig(sc.redacted())), "lbd.plainSourceConfig", "lbd.SourceConfig", 1)
}

// LogValue implements slog.LogValuer, with the secret parameters replaced.
func (sc SourceConfig) LogValue() slog.Value {
	r := sc.redacted()
	return slog.GroupValue(
		slog.String("network", r.Network),
		slog.Any("addrs", r.Addrs),
		slog.Any("params", r.Params),
		slog.Int("recover_check_count", r.RecoverCheckCount),
	)
}

// MarshalJSON implements json.Marshaler: network, addresses and parameters, with the secret
// parameters replaced (the logger and clock are left out).
func (sc SourceConfig) MarshalJSON() ([]byte, error) {
	r := sc.redacted()
	return json.Marshal(struct {
		Network           string            `json:"network"`
		Addrs             []string          `json:"addrs"`
		Params            map[string]string `json:"params,omitempty"`
		RecoverCheckCount int               `json:"recoverCheckCount,omitempty"`
	}{r.Network, r.Addrs, r.Params, r.RecoverCheckCount})
}

// String shows the Connector's DSN as Config.String writes it, without secrets.
func (c *Connector) String() string { return "lbd.Connector{" + c.cfg.String() + "}" }

// GoString implements fmt.GoStringer (%#v) as String does: the Connector's fields are its own.
func (c *Connector) GoString() string { return c.String() }

// LogValue implements slog.LogValuer: the DSN as Config.String writes it.
func (c *Connector) LogValue() slog.Value {
	return slog.GroupValue(slog.String("dsn", c.cfg.String()), slog.String("balance", c.mode.String()))
}

// MarshalJSON implements json.Marshaler: the DSN as Config.String writes it.
func (c *Connector) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		DSN string `json:"dsn"`
	}{c.cfg.String()})
}
