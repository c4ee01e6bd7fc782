package gormplugin

import (
	"database/sql"
	"errors"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/exception"
)

// Name is the name the Plugin registers under with GORM (gorm.Config.Plugins, DB.Use).
const Name = "lbd"

// Plugin reports fatal errors of GORM operations through GORM's logger and can retry failed
// reads once. Add it with db.Use(&Plugin{Connector: c}); Open adds one by itself.
//
// It registers a callback after each of GORM's statement callbacks: "gorm:create",
// "gorm:query", "gorm:update", "gorm:delete", "gorm:row" and "gorm:raw" (named
// "lbd:after_create" and so on), each paired with a "lbd:before_..." callback that runs before
// the operation starts and notes an error the operation already carried, so that such an
// error is neither logged again nor retried. The write callbacks come after GORM's default
// transaction, so a fatal error of its BEGIN or COMMIT is reported too.
//
// A fatal error (per Sorter) is logged with db.Logger.Error, with the sorter's reason and the
// proxy's address when it can be told. The Connector has already retired the connection and
// counted the error against its proxy when the plugin sees it; the plugin never counts again.
// A statement GORM runs on an operation's behalf (saving associations) is an operation of its
// own and reports its error itself; when GORM hands that error up, the outer operation may
// report it again.
//
// The fields are read when GORM initializes the plugin; later changes have no effect. One
// Plugin value may serve several *gorm.DB.
type Plugin struct {
	// Connector is the Connector under the *gorm.DB. The plugin uses it to find the exception
	// sorter named in its DSN (see Sorter). It may be nil.
	Connector *lbd.Connector

	// RetryReads retries a read once when it fails with a fatal error. The Connector's own
	// retryReads (lbd.WithRetryReads, on by default) does this for every user of the Connector,
	// GORM included, and more safely (it proves the statement ran outside any transaction by
	// the server's status flags); while it is on (Connector set and retryReads true), this
	// field does nothing. It matters only with retryReads=false or without a Connector.
	//
	// A read is an operation
	// of GORM's query processor (First, Find, Take, Count, Pluck, ...) or row processor (Row,
	// Rows, Scan) whose SQL is a single SELECT, SHOW, DESC or DESCRIBE that leaves nothing in
	// the session and reads nothing the session holds: no user variables, locks, INTO,
	// FOUND_ROWS() or LAST_INSERT_ID(), SQL_CALC_FOUND_ROWS or NEXTVAL(), no second statement,
	// no DESC ANALYZE and no leading executable comment. Exec and writes are never retried,
	// and neither is a read that failed with a *lbd.ConnectError: the Connector already tried
	// every proxy, or waited failoverTimeoutMillis for one of its target's roles, and a
	// statement a switchover refused was already run again by database/sql on a new
	// connection. The retry happens only outside transactions (the statement runs on the
	// *sql.DB pool itself, possibly through GORM's prepared-statement cache, not on a *sql.Tx,
	// a gorm.TxCommitter or a *sql.Conn from db.Connection, whose connection is the failed
	// one), only while the caller's context is not done, and only once: if the retry fails
	// too, its error is what the caller sees.
	//
	// The failed connection was retired, so database/sql hands the retry another one, normally
	// on another proxy. A read may still have side effects the text does not show (a SELECT
	// calling a stored function that writes); leave RetryReads off when reads must run at most
	// once.
	RetryReads bool

	// Sorter decides which errors are fatal. Nil means the Connector's own sorter
	// (Connector.ExceptionSorter), or exception.Default without a Connector.
	Sorter exception.Sorter
}

var _ gorm.Plugin = (*Plugin)(nil)

// Name implements gorm.Plugin; it returns Name ("lbd").
func (p *Plugin) Name() string { return Name }

// Initialize implements gorm.Plugin: it registers the plugin's callbacks on db. GORM calls it
// from DB.Use and for plugins listed in gorm.Config.Plugins.
func (p *Plugin) Initialize(db *gorm.DB) error {
	h := &hooks{
		sorter:     p.sorter(),
		nodes:      p.locator(),
		retryReads: p.RetryReads && !p.connectorRetries(),
		cfg:        db.Config,
	}
	h.classifier, _ = h.sorter.(exception.Classifier)

	cb := db.Callback()
	errs := []error{
		register(cb.Create(), "create", h.afterStatement),
		register(cb.Update(), "update", h.afterStatement),
		register(cb.Delete(), "delete", h.afterStatement),
		register(cb.Query(), "query", h.afterQuery, "gorm:preload", "gorm:after_query"),
		register(cb.Row(), "row", h.afterRow),
		register(cb.Raw(), "raw", h.afterStatement),
	}
	return errors.Join(errs...)
}

// connectorRetries reports whether the Connector runs failed reads again itself (its
// retryReads, on by default): the plugin then leaves them to it rather than run them a third
// time.
func (p *Plugin) connectorRetries() bool {
	return p.Connector != nil && p.Connector.Config().RetryReads
}

// sorter resolves the Sorter field.
func (p *Plugin) sorter() exception.Sorter {
	if p.Sorter != nil {
		return p.Sorter
	}
	if p.Connector != nil {
		return p.Connector.ExceptionSorter()
	}
	return exception.Default
}

// locator names nodes through the Connector, which remembers which node returned each fatal
// error; without one, only errors that carry an address can be placed.
func (p *Plugin) locator() nodeLocator {
	if p.Connector != nil {
		return connectorLocator{p.Connector}
	}
	return interimLocator{}
}

// beginTx is GORM's callback that opens the default transaction of a write.
const beginTx = "gorm:begin_transaction"

// processor is the part of GORM's callback processor (an unexported type) the plugin uses.
type processor[C callback[C]] interface {
	Before(name string) C
	After(name string) C
	Get(name string) func(*gorm.DB)
}

// callback is the part of GORM's callback builder (an unexported type) the plugin uses.
type callback[C any] interface {
	Before(name string) C
	After(name string) C
	Register(name string, fn func(*gorm.DB)) error
}

// register adds two callbacks to the processor of operation op: "lbd:before_<op>" before the
// operation's first callback (GORM's BEGIN of the default transaction when there is one, else
// "gorm:<op>"), and after, as "lbd:after_<op>", after "gorm:<op>". GORM places a callback that
// is only ordered after another one at the end of the chain; naming the callbacks in before
// keeps after ahead of them (names that are not registered are ignored by GORM).
func register[C callback[C], P processor[C]](p P, op string, after func(*gorm.DB), before ...string) error {
	main := "gorm:" + op
	first := main
	if p.Get(beginTx) != nil {
		first = beginTx
	}
	if err := p.Before(first).Register("lbd:before_"+op, markPreexisting); err != nil {
		return err
	}
	c := p.After(main)
	for _, b := range before {
		if p.Get(b) != nil {
			c = c.Before(b)
			break // GORM keeps one "before" per callback: the first one that exists
		}
	}
	return c.Register("lbd:after_"+op, after)
}

// hooks holds one initialization's settings; its methods are the registered callbacks.
type hooks struct {
	sorter     exception.Sorter
	classifier exception.Classifier // sorter, when it can explain its decisions; else nil
	nodes      nodeLocator
	retryReads bool
	cfg        *gorm.Config // the *gorm.DB's configuration, for its logger (see logger)
}

// preexisting marks, in a statement's settings, that the operation started with an error
// already set; the operation's own callbacks then skip the database and the plugin does
// nothing either.
type preexisting struct{}

// markPreexisting runs before the operation's first callback.
func markPreexisting(db *gorm.DB) {
	if db.Error != nil {
		db.Statement.Settings.Store(preexisting{}, true)
	}
}

// clean reports whether the operation started without an error, and forgets the mark.
func clean(db *gorm.DB) bool {
	_, pre := db.Statement.Settings.LoadAndDelete(preexisting{})
	return !pre
}

// logger returns the logger to report through: the statement's. While DB.Scan runs, GORM
// replaces it with a recorder that forwards to logger.Default rather than to the DB's logger;
// the plugin then reports through the logger of the DB it was initialized on.
func (h *hooks) logger(db *gorm.DB) logger.Interface {
	if reflect.TypeOf(db.Logger) == recorderType && h.cfg.Logger != nil {
		return h.cfg.Logger
	}
	return db.Logger
}

var recorderType = reflect.TypeOf(logger.Recorder.New())

// classify applies the sorter and names its reason.
func (h *hooks) classify(err error) (fatal bool, reason string) {
	if err == nil {
		return false, ""
	}
	if h.classifier != nil {
		return h.classifier.Classify(err)
	}
	if !h.sorter.IsFatal(err) {
		return false, ""
	}
	if _, r := exception.Classify(err); r != "" {
		return true, r
	}
	return true, "sorter"
}

// report logs err when it is fatal and reports whether it was.
func (h *hooks) report(db *gorm.DB, err error, retrying bool) bool {
	fatal, reason := h.classify(err)
	if !fatal {
		return false
	}
	node, ok := h.nodes.NodeOfError(err)
	if !ok {
		node = "unknown"
	}
	msg := "lbd: fatal error (reason %s, node %s): %v"
	if retrying {
		msg += "; retrying the read once on another connection"
	}
	h.logger(db).Error(db.Statement.Context, msg, reason, node, err)
	return true
}

// afterStatement follows create, update, delete and raw: it logs a fatal error.
func (h *hooks) afterStatement(db *gorm.DB) {
	if clean(db) && db.Error != nil {
		h.report(db, db.Error, false)
	}
}

// afterQuery follows "gorm:query" (before preloading and AfterFind hooks): it logs a fatal
// error and, with RetryReads, runs "gorm:query" once more.
func (h *hooks) afterQuery(db *gorm.DB) {
	if !clean(db) || db.Error == nil {
		return
	}
	var rerun func(*gorm.DB)
	if h.canRetry(db, db.Error) {
		rerun = db.Callback().Query().Get("gorm:query") // nil if it was removed
	}
	if !h.report(db, db.Error, rerun != nil) || rerun == nil {
		return
	}
	resetError(db)
	rerun(db)
	if db.Error != nil {
		h.report(db, db.Error, false)
	}
}

// afterRow follows "gorm:row". Row leaves its error in the *sql.Row it returns (Err), Rows in
// db.Error; a retry runs "gorm:row" again in the same mode.
func (h *hooks) afterRow(db *gorm.DB) {
	if !clean(db) {
		return
	}
	err, isRows := rowError(db)
	if err == nil {
		return
	}
	var rerun func(*gorm.DB)
	if h.canRetry(db, err) {
		rerun = db.Callback().Row().Get("gorm:row") // nil if it was removed
	}
	if !h.report(db, err, rerun != nil) || rerun == nil {
		return
	}
	resetError(db)
	if isRows {
		db.Statement.Settings.Store("rows", true) // GORM's own flag, consumed by the first run
	}
	rerun(db)
	if err, _ := rowError(db); err != nil {
		h.report(db, err, false)
	}
}

// rowError returns the error of the row processor's statement and whether it ran as Rows.
func rowError(db *gorm.DB) (err error, isRows bool) {
	switch d := db.Statement.Dest.(type) {
	case *sql.Row:
		if d != nil {
			return d.Err(), false
		}
	case *sql.Rows:
		return db.Error, true
	}
	return db.Error, false
}

// resetError clears the failed attempt's error before the retry.
func resetError(db *gorm.DB) {
	db.Error = nil
	db.RowsAffected = 0
	if db.Statement.Result != nil {
		db.Statement.Result.Error = nil
		db.Statement.Result.RowsAffected = 0
	}
}

// canRetry applies RetryReads' conditions other than fatality.
func (h *hooks) canRetry(db *gorm.DB, err error) bool {
	return h.retryReads &&
		!db.DryRun &&
		db.Statement.Context.Err() == nil &&
		onPool(db.Statement.ConnPool) &&
		!connectorGaveUp(err) &&
		lbd.RetryableRead(db.Statement.SQL.String())
}

// connectorGaveUp reports an error the Connector returns when no connection could be made: it
// tried every proxy, or waited failoverTimeoutMillis for one its target accepts (a
// switchover), and database/sql already ran the statement again on a new connection for each
// statement a switchover refused. A retry would only repeat that wait.
func connectorGaveUp(err error) bool {
	var ce *lbd.ConnectError
	return errors.As(err, &ce)
}

// onPool reports whether statements on p each take a connection from database/sql's pool, so
// that a retry does not land on the connection that just failed: *sql.DB, also behind GORM's
// prepared-statement cache. Transactions (*sql.Tx, gorm.TxCommitter), *sql.Conn and unknown
// pools answer false.
func onPool(p gorm.ConnPool) bool {
	if ps, ok := p.(*gorm.PreparedStmtDB); ok && ps != nil {
		p = ps.ConnPool
	}
	db, ok := p.(*sql.DB)
	return ok && db != nil
}
