package nodes

import (
	"fmt"
	"log/slog"
	"strings"
)

// A Document holds its schema's API keys. Printing one with fmt or log/slog shows how many
// keys it has, never the keys. Its JSON form is the stored document itself (etcd, a file, the
// config-server's state), which must keep the keys, so encoding/json writes them.

// plainDocument is Document without its methods.
type plainDocument Document

// redacted is d with every API key replaced by "***".
func (d Document) redacted() plainDocument {
	if d.APIKeys != nil {
		keys := make([]string, len(d.APIKeys))
		for i := range keys {
			keys[i] = "***"
		}
		d.APIKeys = keys
	}
	return plainDocument(d)
}

// String describes the document with its API keys replaced by "***".
func (d Document) String() string {
	return strings.Replace(fmt.Sprintf("%+v", d.redacted()), "{", "nodes.Document{", 1)
}

// GoString implements fmt.GoStringer (%#v), with the API keys replaced by "***".
func (d Document) GoString() string {
	return strings.Replace(fmt.Sprintf("%#v", d.redacted()), "nodes.plainDocument", "nodes.Document", 1)
}

// LogValue implements slog.LogValuer: the document with the number of its API keys in place
// of the keys.
func (d Document) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("schema", d.Schema),
		slog.Bool("auth_enable", d.AuthEnable),
		slog.Int("api_keys", len(d.APIKeys)),
		slog.Any("proxy", d.Proxy),
		slog.Any("az_list", d.AZList),
		slog.Any("az_proxy", d.AZProxy),
		slog.String("proxy_policy", d.ProxyPolicy),
	)
}
