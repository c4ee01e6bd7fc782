package main

import (
	"fmt"
	"log/slog"

	"github.com/lbd-go/lbd/nodes"
)

// The etcd settings hold a password; printing them hides it.

// plainEtcdConfig is etcdConfig without its methods.
type plainEtcdConfig etcdConfig

// printed is how the etcd settings print: with a set password replaced by "***"; the log
// shows whether a password is set.
func (c etcdConfig) printed() nodes.Printed {
	r := c
	r.Password = nodes.Redact(c.Password)
	return nodes.Printed{
		Name: "main.etcdConfig",
		Text: fmt.Sprintf("{Endpoints:%v Prefix:%q User:%q Password:%q PasswordFile:%q CAFile:%q CertFile:%q KeyFile:%q ServerName:%q DialTimeout:%v RefreshInterval:%v}",
			c.Endpoints.String(), c.Prefix, c.User, r.Password, c.PasswordFile, c.CAFile, c.CertFile, c.KeyFile, c.ServerName, c.DialTimeout, c.RefreshInterval),
		Attrs: []slog.Attr{
			slog.String("endpoints", c.Endpoints.String()),
			slog.String("prefix", c.Prefix),
			slog.String("user", c.User),
			slog.Bool("password_set", c.Password != ""),
			slog.String("passwordFile", c.PasswordFile),
		},
		JSON: plainEtcdConfig(r),
	}
}

// String describes the etcd settings with a set password replaced by "***".
func (c etcdConfig) String() string { return c.printed().String() }

// GoString implements fmt.GoStringer (%#v): the type's name and String.
func (c etcdConfig) GoString() string { return "main.etcdConfig" + c.printed().String() }

// LogValue implements slog.LogValuer: the settings, and whether a password is set.
func (c etcdConfig) LogValue() slog.Value { return c.printed().LogValue() }

// MarshalJSON implements json.Marshaler with a set password replaced by "***".
func (c etcdConfig) MarshalJSON() ([]byte, error) { return c.printed().MarshalJSON() }
