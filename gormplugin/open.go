package gormplugin

import (
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"

	"github.com/lbd-go/lbd"
)

// Open opens a *gorm.DB over an lbd DSN (see lbd.ParseDSN): it builds a Connector with opts,
// opens GORM on it with gorm.io/driver/mysql (see Dialector) and the Plugin. cfg may be nil;
// as with gorm.Open, the returned DB keeps using cfg, so give each Open its own.
//
// A *Plugin already listed in cfg.Plugins under Name is used instead of a new one, with its
// Connector set to the new Connector when it is nil; that is how Open gets a Sorter, or a
// Plugin whose Connector the caller reads later:
//
//	cfg := &gorm.Config{Plugins: map[string]gorm.Plugin{
//		gormplugin.Name: &gormplugin.Plugin{Sorter: mySorter},
//	}}
//
// Like gorm.Open, Open connects once (GORM asks for the server version and pings). Close the
// DB with sqlDB, _ := db.DB(); sqlDB.Close(): database/sql closes the Connector with it, which
// stops its probes and rebalancer. On error nothing is left open.
func Open(dsn string, cfg *gorm.Config, opts ...lbd.Option) (*gorm.DB, error) {
	if cfg == nil {
		cfg = &gorm.Config{}
	}
	c, err := lbd.NewConnector(dsn, opts...)
	if err != nil {
		return nil, err
	}
	listed, err := listedPlugin(cfg, c)
	if err != nil {
		c.Close()
		return nil, err
	}
	sqlDB := sql.OpenDB(c)
	db, err := gorm.Open(mysql.New(dialectorConfig(c, sqlDB)), cfg)
	if err == nil && !listed {
		err = db.Use(&Plugin{Connector: c})
	}
	if err != nil {
		sqlDB.Close() // closes c too; idempotent where GORM closed it already
		if listed {
			cfg.Plugins[Name].(*Plugin).Connector = nil
		}
		return nil, err
	}
	return db, nil
}

// listedPlugin checks cfg.Plugins[Name]: absent (false), a *Plugin that Open completes with c
// (true), or anything else (an error).
func listedPlugin(cfg *gorm.Config, c *lbd.Connector) (bool, error) {
	gp, ok := cfg.Plugins[Name]
	if !ok {
		return false, nil
	}
	p, ok := gp.(*Plugin)
	switch {
	case !ok || p == nil:
		return false, fmt.Errorf("gormplugin: cfg.Plugins[%q] holds a %T; Open adds its own *gormplugin.Plugin under that name", Name, gp)
	case p.Connector != nil && p.Connector != c:
		return false, errors.New("gormplugin: the *Plugin in cfg.Plugins has a Connector of its own; leave it nil for Open, or use Dialector with that Connector")
	}
	p.Connector = c
	return true, nil
}

// Dialector returns gorm.io/driver/mysql's dialector over c, with mysql.Config{Conn:
// sql.OpenDB(c), DSNConfig: the DSN's go-sql-driver settings} and the driver's other
// defaults (see the package documentation). Hand it to
// gorm.Open and add a Plugin with the same Connector:
//
//	db, err := gorm.Open(gormplugin.Dialector(c), &gorm.Config{})
//	if err != nil { ... }
//	err = db.Use(&gormplugin.Plugin{Connector: c})
//
// Closing the *sql.DB (db.DB()) closes c. gorm.Open closes it by itself when it fails; a
// Dialector that is never opened leaves a *sql.DB behind, so make one per gorm.Open.
func Dialector(c *lbd.Connector) gorm.Dialector {
	return mysql.New(dialectorConfig(c, sql.OpenDB(c)))
}

// dialectorConfig is gorm.io/driver/mysql's configuration over db: the connection, and the
// DSN's go-sql-driver settings, which GORM reads where it renders SQL itself (its SQL log,
// ToSQL and dry runs format times in the DSN's loc, as go-sql-driver sends them).
func dialectorConfig(c *lbd.Connector, db *sql.DB) mysql.Config {
	return mysql.Config{Conn: db, DSNConfig: c.Config().MySQL}
}
