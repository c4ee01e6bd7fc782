package lbd

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/physical"
)

func init() {
	// One process-wide registration serves every Connector: the node to dial and the counters
	// to charge travel in the dial context (internal/physical's ticket), so nothing is
	// registered per Connector.
	mysql.RegisterDialContext(Network, physical.Dial)
}

// CredentialsFunc returns the user name and password (or token, for an authentication plugin
// that takes one in the password's place) for one new physical connection to node, "host:port"
// in canonical form. ctx is the dial's: it carries the dial timeout (the DSN's timeout,
// DefaultDialTimeout without one) or the probe timeout, and ends when the Connector closes; a
// function that waits on something (a secrets store) must return when ctx ends.
//
// It is called once for every dial lbd makes, the application's connections and every node's
// probe connection alike, from many goroutines at once, and must be safe for that. Connections
// already open keep the credentials they logged in with until they close or are retired, so a
// password can be rotated without a failed statement: have the server accept the new password
// (MariaDB's ALTER USER keeps open sessions; MySQL 8.0.14 and newer can keep the old password
// too, RETAIN CURRENT PASSWORD), then return the new one. lbd keeps nothing it returns.
type CredentialsFunc func(ctx context.Context, node string) (user, password string, err error)

// WithCredentials has every dial take its user and password from f instead of the DSN's (see
// CredentialsFunc). The DSN's password may then be left out; it is used by nothing. What f
// returns never appears in lbd's errors, logs, Stats or printed Config and Connector, which
// hold the DSN's user and password, if any ("***").
//
// go-sql-driver's own hook, Config.BeforeConnect (set on Config.MySQL with
// Apply(mysql.BeforeConnect(fn))), is honoured as well: it runs for every dial and probe dial,
// after f, on a copy of the node's go-sql-driver config (Addr is the node), and may change the
// user, the password or other settings of that one connection, but not Addr or Net.
//
// An error from f or from BeforeConnect fails the dial without reaching the node, with an
// error that wraps ErrNoCredentials and f's error, and names the node: Connect returns it at
// once (as it does access denied: another node would fare no better), nothing is held against
// the node, and a probe that fails so gives no verdict on it. An empty user name, and a panic in
// f, fail the dial the same way. A nil f is an error.
func WithCredentials(f CredentialsFunc) Option {
	return func(c *Config) error {
		if f == nil {
			return errors.New("lbd: WithCredentials: nil function")
		}
		c.credentials = f
		return nil
	}
}

// ErrNoCredentials is wrapped by the error of a dial that never reached its node because the
// function given to WithCredentials, or go-sql-driver's Config.BeforeConnect, returned an error
// (the error wraps that one too, and names the node). Connect returns such an error at once, and
// nothing is held against the node. Test with errors.Is(err, lbd.ErrNoCredentials).
var ErrNoCredentials = physical.ErrNoCredentials

// credentialsConnector is a node's go-sql-driver connector under WithCredentials: each Connect
// asks the function for the user and password and dials with a copy of the node's config that
// carries them. The copy lives as long as the connection, in go-sql-driver's hands only.
type credentialsConnector struct {
	cfg   *mysql.Config // the node's config (network "lb", its address, its TLS name)
	node  string
	creds CredentialsFunc
}

func (cc *credentialsConnector) Connect(ctx context.Context) (driver.Conn, error) {
	user, password, err := cc.call(ctx)
	if err != nil {
		return nil, fmt.Errorf("WithCredentials: %w", err)
	}
	if user == "" {
		return nil, errors.New("WithCredentials: the function returned an empty user name")
	}
	cfg := cc.cfg.Clone()
	cfg.User, cfg.Passwd = user, password
	conn, err := mysql.NewConnector(cfg) // checks cfg as newNode did; runs BeforeConnect on its own copy
	if err != nil {
		return nil, err
	}
	physical.SetDialPassword(ctx, password) // a TLS login may send it itself (physical's login.go)
	return conn.Connect(ctx)
}

// call runs the function, turning a panic into an error: it would otherwise pass for a proxy
// that broke the handshake (physical.Connect recovers go-sql-driver's panics as such).
func (cc *credentialsConnector) call(ctx context.Context) (user, password string, err error) {
	defer func() {
		if r := recover(); r != nil {
			user, password, err = "", "", fmt.Errorf("the function panicked: %v", r)
		}
	}()
	return cc.creds(ctx, cc.node)
}

func (cc *credentialsConnector) Driver() driver.Driver { return mysql.MySQLDriver{} }

// nodeConnector is the go-sql-driver connector for the node at addr, whose config is my.
func (c *Connector) nodeConnector(addr string, my *mysql.Config) (driver.Connector, error) {
	connector, err := mysql.NewConnector(my)
	if err != nil || c.cfg.credentials == nil {
		return connector, err
	}
	return &credentialsConnector{cfg: my, node: addr, creds: c.cfg.credentials}, nil
}
