// Package gormplugin runs GORM (gorm.io/gorm with gorm.io/driver/mysql) over an lbd Connector,
// so that a GORM application talks to a cluster of MySQL-protocol proxies directly.
//
// The simplest way in is Open:
//
//	db, err := gormplugin.Open("user:pass@lb(10.0.0.1:2883,10.0.0.2:2883)/app?parseTime=true",
//		&gorm.Config{})
//	...
//	sqlDB, _ := db.DB()
//	defer sqlDB.Close() // also stops the connector's probes and rebalancer
//
// To reuse a Connector, or to set options of gorm.io/driver/mysql, build the dialector yourself
// and add the Plugin:
//
//	c, err := lbd.NewConnector(dsn)
//	db, err := gorm.Open(gormplugin.Dialector(c), &gorm.Config{})
//	err = db.Use(&gormplugin.Plugin{Connector: c})
//
// # What the connector does and what the plugin adds
//
// Everything that keeps a cluster healthy happens below GORM, in the Connector: each physical
// connection goes to the least-loaded proxy that is up, every error of every statement,
// transaction and row iteration goes through the exception sorter, and a fatal error retires its
// connection (database/sql drops it instead of reusing it) and counts against the proxy, which
// goes down after fatalErrorThreshold such errors within fatalErrorWindowSeconds. That works
// for GORM without any plugin.
//
// The Plugin adds two things GORM users ask for:
//
//   - a log line, through GORM's own logger, for every fatal error a GORM operation returns,
//     naming the reason (the exception sorter's classification) and, when it can be told, the
//     proxy;
//   - with RetryReads, one transparent retry of a read that failed with a fatal error outside a
//     transaction, where the Connector does not retry reads itself (its retryReads, on by
//     default, runs such reads once more on another proxy for every user, GORM included).
//
// The plugin only logs: it never counts errors, retires connections or marks proxies down, so
// nothing is counted twice.
//
// # Dialector settings
//
// Dialector keeps gorm.io/driver/mysql's defaults. In particular it asks the server for its
// version (SELECT VERSION()) when GORM opens, because GORM derives dialect features from it
// (MariaDB, MySQL 5.x and TiDB each lack some DDL); every proxy of a cluster fronts the same
// kind of server, so any one of them answers for all. Strings without a size stay longtext, as
// with plain gorm.io/driver/mysql. When those defaults do not fit (a proxy that rejects
// SELECT VERSION(), a DefaultStringSize for indexable string columns, ...), build the
// dialector with mysql.New(mysql.Config{Conn: sql.OpenDB(c), ...}) and add the Plugin as
// above.
package gormplugin
