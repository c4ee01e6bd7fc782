package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lbd-go/lbd/configserver"
)

// passwordEnv names the environment variable read for the etcd password when neither the
// flags nor the config file give one.
const passwordEnv = "LBD_ETCD_PASSWORD"

// adminTokenEnv names the environment variable read for the admin token when no token file is
// given.
const adminTokenEnv = "LBD_ADMIN_TOKEN"

// Default addresses: clients must reach the config-server, so it listens on every interface;
// the admin endpoints listen on loopback, for operators on the same host.
const (
	defaultListen      = ":8080"
	defaultAdminListen = "127.0.0.1:8081"
)

// config is everything the command can be told, from the config file and the flags.
type config struct {
	Listen         string        `yaml:"listen"`
	AdminListen    string        `yaml:"adminListen"`
	AdminTokenFile string        `yaml:"adminTokenFile"`
	ReloadInterval time.Duration `yaml:"reloadInterval"`
	Backend        string        `yaml:"backend"`
	Etcd           etcdConfig    `yaml:"etcd"`
	File           struct {
		Path         string        `yaml:"path"`
		PollInterval time.Duration `yaml:"pollInterval"`
	} `yaml:"file"`
	OnlineOfflineLoopbackOnly bool          `yaml:"onlineOfflineLoopbackOnly"`
	HideUnknownSchemas        bool          `yaml:"hideUnknownSchemas"`
	DrainWindow               time.Duration `yaml:"drainWindow"`
	ShutdownTimeout           time.Duration `yaml:"shutdownTimeout"`
	Probe                     struct {
		Interval    time.Duration `yaml:"interval"`
		Timeout     time.Duration `yaml:"timeout"`
		Concurrency int           `yaml:"concurrency"`
	} `yaml:"probe"`
	Log struct {
		Level  string `yaml:"level"`
		Format string `yaml:"format"`
	} `yaml:"log"`
}

type etcdConfig struct {
	Endpoints       listValue     `yaml:"endpoints"`
	Prefix          string        `yaml:"prefix"`
	User            string        `yaml:"user"`
	Password        string        `yaml:"password"`
	PasswordFile    string        `yaml:"passwordFile"`
	CAFile          string        `yaml:"caFile"`
	CertFile        string        `yaml:"certFile"`
	KeyFile         string        `yaml:"keyFile"`
	ServerName      string        `yaml:"serverName"`
	DialTimeout     time.Duration `yaml:"dialTimeout"`
	RefreshInterval time.Duration `yaml:"refreshInterval"`
}

func defaults() config {
	var c config
	c.Listen = defaultListen
	c.AdminListen = defaultAdminListen
	c.ReloadInterval = configserver.DefaultReloadInterval
	c.Etcd.Prefix = "/lbd/schemas"
	c.Etcd.DialTimeout = configserver.DefaultEtcdDialTimeout
	c.Etcd.RefreshInterval = configserver.DefaultEtcdRefreshInterval
	c.File.PollInterval = configserver.DefaultFilePollInterval
	c.OnlineOfflineLoopbackOnly = true
	c.DrainWindow = configserver.DefaultDrainWindow
	c.ShutdownTimeout = 10 * time.Second
	c.Probe.Interval = configserver.DefaultProbeInterval
	c.Probe.Timeout = configserver.DefaultProbeTimeout
	c.Probe.Concurrency = configserver.DefaultProbeConcurrency
	c.Log.Level = "info"
	c.Log.Format = "text"
	return c
}

// listValue is a comma-separated list flag.
type listValue []string

func (l *listValue) String() string { return strings.Join(*l, ",") }

func (l *listValue) Set(s string) error {
	*l = nil
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*l = append(*l, e)
		}
	}
	return nil
}

// flagSet binds every flag to a field of c; the field's value is the flag's default.
func flagSet(c *config, configPath *string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lbd-config-server", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(configPath, "config", "", "YAML (or JSON) `file` with the settings below; flags given on the command line override it")
	fs.StringVar(&c.Listen, "listen", c.Listen, "`address` serving the clients: /fetch_sql_proxy_list, /health/status, /health/check (the default is every interface: clients must reach it)")
	fs.StringVar(&c.AdminListen, "admin-listen", c.AdminListen, "`address` serving the admin endpoints /monitor, /reload, /health/offline, /health/online; empty: none. Off loopback it needs an admin token")
	fs.StringVar(&c.AdminTokenFile, "admin-token-file", c.AdminTokenFile, "`file` holding the admin token (at least 16 characters; surrounding white space is ignored), else $"+adminTokenEnv+"; when set, every admin request needs Authorization: Bearer <token>")
	fs.DurationVar(&c.ReloadInterval, "reload-interval", c.ReloadInterval, "shortest time between two reads of the store by /reload (concurrent calls share one); 0 or negative: no spacing")
	fs.StringVar(&c.Backend, "backend", c.Backend, "where documents come from: etcd or file (required)")

	fs.Var(&c.Etcd.Endpoints, "etcd-endpoints", "comma-separated etcd `endpoints`: host:port, http://host:port or https://host:port")
	fs.StringVar(&c.Etcd.Prefix, "etcd-prefix", c.Etcd.Prefix, "etcd key `prefix`; schema s is the document at <prefix>/s")
	fs.StringVar(&c.Etcd.User, "etcd-user", c.Etcd.User, "etcd `user name`")
	fs.StringVar(&c.Etcd.Password, "etcd-password", c.Etcd.Password, "etcd `password` (visible to other local users in the process list: prefer -etcd-password-file or $"+passwordEnv+")")
	fs.StringVar(&c.Etcd.PasswordFile, "etcd-password-file", c.Etcd.PasswordFile, "`file` holding the etcd password (surrounding white space is ignored)")
	fs.StringVar(&c.Etcd.CAFile, "etcd-ca", c.Etcd.CAFile, "PEM `file` of the CAs trusted for etcd's certificate; any -etcd-ca/-etcd-cert/-etcd-key/-etcd-server-name turns TLS on")
	fs.StringVar(&c.Etcd.CertFile, "etcd-cert", c.Etcd.CertFile, "PEM client certificate `file` for etcd (with -etcd-key)")
	fs.StringVar(&c.Etcd.KeyFile, "etcd-key", c.Etcd.KeyFile, "PEM client key `file` for etcd (with -etcd-cert)")
	fs.StringVar(&c.Etcd.ServerName, "etcd-server-name", c.Etcd.ServerName, "`name` expected in etcd's certificate, when it is not the endpoint's host")
	fs.DurationVar(&c.Etcd.DialTimeout, "etcd-dial-timeout", c.Etcd.DialTimeout, "bound of connecting to etcd and of each read")
	fs.DurationVar(&c.Etcd.RefreshInterval, "etcd-refresh-interval", c.Etcd.RefreshInterval, "time between full reads of the prefix, backing the watch up")

	fs.StringVar(&c.File.Path, "file", c.File.Path, "documents `file`: one JSON document, a JSON array of them, or a YAML list")
	fs.DurationVar(&c.File.PollInterval, "file-poll-interval", c.File.PollInterval, "how often the file is checked for changes; 0 or negative: only on /reload")

	fs.BoolVar(&c.OnlineOfflineLoopbackOnly, "online-offline-loopback-only", c.OnlineOfflineLoopbackOnly, "accept /health/online and /health/offline from loopback clients only, even with the admin token")
	fs.BoolVar(&c.HideUnknownSchemas, "hide-unknown-schemas", c.HideUnknownSchemas, "answer unknown schemas with 403 like a schema needing an API key, instead of {\"code\":404}, so names cannot be enumerated")
	fs.DurationVar(&c.DrainWindow, "drain-window", c.DrainWindow, "/health/offline answers 500 while other requests came in this recently")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "on SIGINT or SIGTERM, time given to requests in flight")
	fs.DurationVar(&c.Probe.Interval, "probe-interval", c.Probe.Interval, "time between TCP probes of every proxy (shown by /monitor); 0 or negative: no probes")
	fs.DurationVar(&c.Probe.Timeout, "probe-timeout", c.Probe.Timeout, "bound of one TCP probe")
	fs.IntVar(&c.Probe.Concurrency, "probe-concurrency", c.Probe.Concurrency, "TCP probes in flight at once")
	fs.StringVar(&c.Log.Level, "log-level", c.Log.Level, "debug, info, warn or error; debug also logs every fetch and the etcd client's messages")
	fs.StringVar(&c.Log.Format, "log-format", c.Log.Format, "text or json")

	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}
	return fs
}

const usageHeader = `lbd-config-server serves SQL proxy lists to lbd and lb-driver clients, speaking the
protocol of lb-driver's Java config-server.

Usage:
  lbd-config-server -backend etcd -etcd-endpoints 10.0.0.1:2379 [-etcd-prefix /lbd/schemas]
  lbd-config-server -backend file -file /etc/lbd/schemas.json
  lbd-config-server -config /etc/lbd/config-server.yaml [flags]

Endpoints:
  on -listen (default ` + defaultListen + `, every interface):
    GET /fetch_sql_proxy_list   the clients' protocol (lb-driver's and lbd's)
    GET /health/status, /health/check   for load balancers
  on -admin-listen (default ` + defaultAdminListen + `, loopback only):
    GET /monitor, POST /reload, POST /health/offline, POST /health/online (and the two above)
    A GET that would change state is refused (405), so is any request from a web page (403:
    Origin or Sec-Fetch-Site headers). With an admin token (-admin-token-file or
    $` + adminTokenEnv + `) every admin request needs "Authorization: Bearer <token>" and
    /monitor also shows schemas with API keys; without one it hides them. An admin address
    off loopback requires a token.

The config file has the flags' settings under these keys (durations like "5s"):
  listen, adminListen, adminTokenFile, reloadInterval, backend, hideUnknownSchemas,
  onlineOfflineLoopbackOnly, drainWindow, shutdownTimeout,
  etcd: {endpoints: [..], prefix, user, password, passwordFile, caFile, certFile, keyFile,
         serverName, dialTimeout, refreshInterval}
  file: {path, pollInterval}
  probe: {interval, timeout, concurrency}
  log: {level, format}
The etcd password may also come from $` + passwordEnv + `; it and the admin token are never
logged.

Flags:
`

// usageError is a command line the flag package rejected, after printing why and the usage.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// parseConfig reads the config file named by -config, if any, and applies the flags over it.
func parseConfig(args []string, out io.Writer) (config, error) {
	c := defaults()
	var path string
	fs := flagSet(&c, &path, out)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config{}, err
		}
		return config{}, usageError{err}
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q (all settings are flags)", fs.Arg(0))
	}
	if path != "" {
		c = defaults()
		data, err := os.ReadFile(path)
		if err != nil {
			return config{}, fmt.Errorf("reading the config file: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return config{}, fmt.Errorf("config file %s: %w", path, err)
		}
		// The flags again, over the file's settings.
		if err := flagSet(&c, &path, io.Discard).Parse(args); err != nil {
			return config{}, usageError{err} // not reached: the same arguments parsed above
		}
	}
	return c, nil
}

// logger builds the process's logger on w.
func (c config) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Log.Level)); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", c.Log.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(c.Log.Format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", c.Log.Format)
}

// backend builds the configured backend.
func (c config) backend(log *slog.Logger) (configserver.Backend, error) {
	switch c.Backend {
	case "etcd":
		if len(c.Etcd.Endpoints) == 0 {
			return nil, errors.New("-etcd-endpoints (etcd.endpoints in the config file) is required with -backend etcd")
		}
		password, err := c.Etcd.password()
		if err != nil {
			return nil, err
		}
		tlsConfig, err := c.Etcd.tls()
		if err != nil {
			return nil, err
		}
		return configserver.NewEtcd(configserver.EtcdConfig{
			Endpoints:       c.Etcd.Endpoints,
			Prefix:          c.Etcd.Prefix,
			Username:        c.Etcd.User,
			Password:        password,
			TLS:             tlsConfig,
			DialTimeout:     c.Etcd.DialTimeout,
			RefreshInterval: c.Etcd.RefreshInterval,
			Logger:          log,
			LogClient:       log.Enabled(context.Background(), slog.LevelDebug),
		})
	case "file":
		if c.File.Path == "" {
			return nil, errors.New("-file (file.path in the config file) is required with -backend file")
		}
		return configserver.NewFile(configserver.FileConfig{Path: c.File.Path, PollInterval: offIfNotPositive(c.File.PollInterval), Logger: log})
	case "":
		return nil, errors.New("no backend: give -backend etcd or -backend file")
	}
	return nil, fmt.Errorf("backend %q: want etcd or file", c.Backend)
}

// adminToken returns the admin token from the token file, else from the environment; "" means
// none. The token's own rules are configserver.New's.
func (c config) adminToken() (string, error) {
	if c.AdminTokenFile != "" {
		b, err := os.ReadFile(c.AdminTokenFile)
		if err != nil {
			return "", fmt.Errorf("admin token file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("admin token file %s is empty", c.AdminTokenFile)
		}
		return token, nil
	}
	return strings.TrimSpace(os.Getenv(adminTokenEnv)), nil
}

// password returns the etcd password from the flag or file setting, the password file or the
// environment, in that order.
func (e etcdConfig) password() (string, error) {
	if e.Password != "" && e.PasswordFile != "" {
		return "", errors.New("give the etcd password or a password file, not both")
	}
	if e.Password != "" {
		return e.Password, nil
	}
	if e.PasswordFile != "" {
		b, err := os.ReadFile(e.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("etcd password file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return os.Getenv(passwordEnv), nil
}

// tls returns the TLS settings for etcd, nil when none is given.
func (e etcdConfig) tls() (*tls.Config, error) {
	if e.CAFile == "" && e.CertFile == "" && e.KeyFile == "" && e.ServerName == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: e.ServerName}
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd CA file %s holds no PEM certificate", e.CAFile)
		}
	}
	if (e.CertFile == "") != (e.KeyFile == "") {
		return nil, errors.New("-etcd-cert and -etcd-key go together")
	}
	if e.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
