package lbd

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// redacted replaces a secret in everything lbd prints.
const redacted = "***"

// A Config and a Connector hold the DSN's password and a node source's secret parameters
// (nodes.SourceFactory.Secrets). Every way of printing them hides those: String, GoString
// (%#v), LogValue (log/slog) and MarshalJSON. Config has value receivers, so that a value
// prints like a pointer; a Connector holds locks and is only used by pointer.

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
	c.SourceParams = nodes.RedactParams(c.Network, c.SourceParams)
	c.source = nil // a source given with WithSource may hold credentials of its own
	return c
}

// plainConfig is Config without its methods, for GoString.
type plainConfig Config

// GoString implements fmt.GoStringer (%#v): the fields, with the source's secret parameters
// replaced, the go-sql-driver settings, Logger and Sorter shown as pointers or values of their
// own (String shows the settings without the password), and a source given with WithSource
// left out.
func (c Config) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", plainConfig(c.redacted())), "lbd.plainConfig", "lbd.Config", 1)
}

// LogValue implements slog.LogValuer: the DSN as String writes it.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON implements json.Marshaler: a JSON string holding the DSN as String writes it.
// Nothing in lbd reads a Config from JSON; ParseDSN reads the DSN.
func (c Config) MarshalJSON() ([]byte, error) { return json.Marshal(c.String()) }

// String shows the Connector's DSN as Config.String writes it, without secrets.
func (c *Connector) String() string { return "lbd.Connector{" + c.cfg.String() + "}" }

// GoString implements fmt.GoStringer (%#v) as String does: the Connector's fields are its own.
func (c *Connector) GoString() string { return c.String() }

// LogValue implements slog.LogValuer: the DSN as Config.String writes it.
func (c *Connector) LogValue() slog.Value {
	return slog.GroupValue(slog.String("dsn", c.cfg.String()), slog.String("balance", c.cfg.Balance.String()))
}

// MarshalJSON implements json.Marshaler: the DSN as Config.String writes it.
func (c *Connector) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		DSN string `json:"dsn"`
	}{c.cfg.String()})
}
