package main

import (
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/lbd-go/lbd/nodes"
)

// The etcd settings hold a password; printing them hides it.

// String describes the etcd settings with a set password replaced by "***".
func (c etcdConfig) String() string {
	pw := nodes.Redact(c.Password)
	return fmt.Sprintf("{Endpoints:%v Prefix:%q User:%q Password:%q PasswordFile:%q CAFile:%q CertFile:%q KeyFile:%q ServerName:%q DialTimeout:%v RefreshInterval:%v}",
		c.Endpoints.String(), c.Prefix, c.User, pw, c.PasswordFile, c.CAFile, c.CertFile, c.KeyFile, c.ServerName, c.DialTimeout, c.RefreshInterval)
}

// GoString implements fmt.GoStringer (%#v) as String does.
func (c etcdConfig) GoString() string { return "main.etcdConfig" + c.String() }

// LogValue implements slog.LogValuer: the settings, and whether a password is set.
func (c etcdConfig) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoints", c.Endpoints.String()),
		slog.String("prefix", c.Prefix),
		slog.String("user", c.User),
		slog.Bool("password_set", c.Password != ""),
		slog.String("passwordFile", c.PasswordFile),
	)
}

// plainEtcdConfig is etcdConfig without its methods.
type plainEtcdConfig etcdConfig

// MarshalJSON implements json.Marshaler with a set password replaced by "***".
func (c etcdConfig) MarshalJSON() ([]byte, error) {
	c.Password = nodes.Redact(c.Password)
	return json.Marshal(plainEtcdConfig(c))
}
