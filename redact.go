package lbd

import (
	"log/slog"

	"github.com/lbd-go/lbd/nodes"
)

// redacted replaces a secret in everything lbd prints.
const redacted = "***"

// A Config and a Connector hold the DSN's password and a node source's secret parameters
// (nodes.SourceFactory.Secrets). Every way of printing them hides those: String, GoString
// (%#v), LogValue (log/slog) and MarshalJSON. Config has value receivers, so that a value
// prints like a pointer; a Connector holds locks and is only used by pointer.

// printed is how a Config prints: the DSN with the password, and the values of a source's
// secret parameters, replaced by "***"; %#v shows the fields, with the go-sql-driver settings,
// Logger and Sorter as pointers or values of their own and a source given with WithSource left
// out; LogValue and MarshalJSON (a JSON string) carry the DSN. Nothing in lbd reads a Config
// from JSON; ParseDSN reads the DSN.
func (c Config) printed() nodes.Printed {
	red := c.redacted()
	dsn := ""
	if c.MySQL != nil {
		dsn = red.FormatDSN()
	}
	return nodes.Printed{Name: "lbd.Config", Text: dsn, Fields: plainConfig(red), JSON: dsn}
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

// plainConfig is Config without its methods, for GoString and MarshalJSON.
type plainConfig Config

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a Config as printed says.
func (c Config) String() string               { return c.printed().String() }
func (c Config) GoString() string             { return c.printed().GoString() }
func (c Config) LogValue() slog.Value         { return c.printed().LogValue() }
func (c Config) MarshalJSON() ([]byte, error) { return c.printed().MarshalJSON() }

// printedConnector is how a Connector prints: by its DSN as Config.String writes it (its
// fields are its own).
func printedConnector(c *Connector) nodes.Printed {
	dsn := c.cfg.String()
	return nodes.Printed{Name: "lbd.Connector", Text: "lbd.Connector{" + dsn + "}",
		Attrs: []slog.Attr{slog.String("dsn", dsn), slog.String("balance", c.cfg.Balance.String())},
		JSON: struct {
			DSN string `json:"dsn"`
		}{dsn}}
}

// String, GoString (%#v), LogValue (log/slog) and MarshalJSON print a Connector as printed says.
func (c *Connector) String() string               { return printedConnector(c).String() }
func (c *Connector) GoString() string             { return printedConnector(c).GoString() }
func (c *Connector) LogValue() slog.Value         { return printedConnector(c).LogValue() }
func (c *Connector) MarshalJSON() ([]byte, error) { return printedConnector(c).MarshalJSON() }
