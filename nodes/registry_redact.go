package nodes

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
)

// A SourceConfig holds a source's secret parameters (SourceFactory.Secrets). Every way of
// printing one hides those: String, GoString (%#v), LogValue (log/slog) and MarshalJSON. Its
// methods have value receivers, so that a value prints like a pointer.

// paramMask replaces a secret parameter's value in everything printed.
const paramMask = "***"

// Redact returns what lbd prints in place of a secret: "***" for a set one, "" for an unset
// one (so that whether a secret is set stays visible). Every type of lbd's that holds a secret
// prints it through Redact.
func Redact(secret string) string {
	if secret == "" {
		return ""
	}
	return paramMask
}

// RedactParams returns a copy of params with the values of network's secret parameters
// replaced by "***": those its SourceFactory lists as Secrets and, for a network that is not
// registered, any whose name says it holds a secret (password, key, secret, token). A
// lbd.Config prints its source parameters through it.
func RedactParams(network string, params map[string]string) map[string]string {
	if len(params) == 0 {
		return params
	}
	f, registered := Lookup(network)
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
			out[k] = paramMask
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
	sc.Params = RedactParams(sc.Network, sc.Params)
	return sc
}

// String shows the network, the addresses and the parameters, with the source's secret
// parameters replaced by "***".
func (sc SourceConfig) String() string {
	r := sc.redacted()
	return fmt.Sprintf("nodes.SourceConfig{Network:%q Addrs:%q Params:%v RecoverCheckCount:%d}", r.Network, r.Addrs, r.Params, r.RecoverCheckCount)
}

// GoString implements fmt.GoStringer (%#v), with the secret parameters replaced.
func (sc SourceConfig) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", plainSourceConfig(sc.redacted())), "nodes.plainSourceConfig", "nodes.SourceConfig", 1)
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
