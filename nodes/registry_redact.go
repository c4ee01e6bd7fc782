package nodes

import (
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

// printed is how a SourceConfig prints: the network, the addresses and the parameters, with
// the source's secret parameters replaced by "***" (the logger and clock are left out of
// JSON).
func (sc SourceConfig) printed() Printed {
	r := sc
	r.Params = RedactParams(sc.Network, sc.Params)
	return Printed{
		Name:   "nodes.SourceConfig",
		Text:   fmt.Sprintf("nodes.SourceConfig{Network:%q Addrs:%q Params:%v RecoverCheckCount:%d}", r.Network, r.Addrs, r.Params, r.RecoverCheckCount),
		Fields: plainSourceConfig(r),
		Attrs: []slog.Attr{
			slog.String("network", r.Network),
			slog.Any("addrs", r.Addrs),
			slog.Any("params", r.Params),
			slog.Int("recover_check_count", r.RecoverCheckCount),
		},
		JSON: struct {
			Network           string            `json:"network"`
			Addrs             []string          `json:"addrs"`
			Params            map[string]string `json:"params,omitempty"`
			RecoverCheckCount int               `json:"recoverCheckCount,omitempty"`
		}{r.Network, r.Addrs, r.Params, r.RecoverCheckCount},
	}
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a SourceConfig as printed says.
func (sc SourceConfig) String() string               { return sc.printed().String() }
func (sc SourceConfig) GoString() string             { return sc.printed().GoString() }
func (sc SourceConfig) LogValue() slog.Value         { return sc.printed().LogValue() }
func (sc SourceConfig) MarshalJSON() ([]byte, error) { return sc.printed().MarshalJSON() }
