package lbdtest

import (
	"crypto/tls"
	"errors"
	"log/slog"
)

// EnvBackendDSN names the environment variable that, when non-empty,
// points the proxies at an existing MySQL or MariaDB server instead of an
// in-memory one. Its value is a go-sql-driver DSN such as
// "root:@tcp(127.0.0.1:3306)/test".
const EnvBackendDSN = "LBD_TEST_MYSQL_DSN"

// DefaultDatabase is the database name used when WithDatabase is not given
// and the backend DSN names none.
const DefaultDatabase = "test"

// ErrClosed is returned by operations on a Cluster or Proxy after
// Cluster.Close.
var ErrClosed = errors.New("lbdtest: cluster closed")

// Option configures Start and NewCluster.
type Option func(*config)

type config struct {
	database string
	logger   *slog.Logger
	tls      *tls.Config
}

func defaultConfig() config {
	return config{
		database: DefaultDatabase,
		logger:   slog.New(slog.DiscardHandler),
	}
}

// WithDatabase sets the name of the database the cluster serves (default
// DefaultDatabase, "test"). With the in-memory backend the database is
// created empty under this name. With an external backend it is used only
// when the DSN in EnvBackendDSN names no database, and it must already
// exist there. An empty name keeps the default.
func WithDatabase(name string) Option {
	return func(c *config) {
		if name != "" {
			c.database = name
		}
	}
}

// WithTLS makes the in-memory backend offer TLS (CLIENT_SSL) and serve it with cfg, so a
// client with go-sql-driver's tls parameter runs its connections over TLS through the
// proxies. A proxy relays a TLS connection's bytes as they are, after the client's SSL request:
// it cannot read them, so SetFail, SetLatency and the role answers do not apply to those
// connections (stopping and hanging a proxy do). With an external backend (EnvBackendDSN)
// the option has no effect: that server's own TLS settings apply. A nil cfg keeps TLS off.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) { c.tls = cfg }
}

// WithLogger sets where the proxies report connection events and injected
// faults, at debug and warn level (default: a logger that discards
// everything). A nil logger keeps the default.
//
// The libraries inside the in-memory backend report their own (rare)
// errors through their default loggers; this option does not affect
// them.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}
