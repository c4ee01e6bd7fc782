// Package txrun is the machinery of the root's RunTx: the loop that runs a caller's
// transaction, sorts the error that ended each attempt (a rerun allowed, none, or COMMIT's
// outcome unknown) and pauses between attempts. The root keeps the public surface (RunTx,
// TxRetryPolicy, TxError, the defaults) and hands this package the policy with its defaults
// applied and its own error values; this package imports no other package of this module but
// exception.
package txrun

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/exception"
)

// Config is one RunTx call's policy, with its defaults applied, and the root's errors.
type Config struct {
	MaxAttempts    int                          // attempts at most, the first included (≥ 1)
	InitialBackoff time.Duration                // the pause before the first rerun (0: none); it doubles up to MaxBackoff
	MaxBackoff     time.Duration                // bounds one pause
	OnRerun        func(attempt int, err error) // called before each rerun when set
	PrimaryChanged error                        // the root's ErrPrimaryChanged: a role change, rerun
	CommitUnknown  error                        // the root's ErrCommitUnknown, wrapped with the cause
}

// Result is how a run ended: Err nil once a COMMIT succeeded.
type Result struct {
	Attempts   int   // how many transactions began or were tried, from 1 to MaxAttempts
	Rerunnable bool  // Err allows a rerun, but the attempts ran out or the context ended first
	Err        error // the error that ended the last attempt, as returned (CommitUnknown wrapping the cause)
	Context    error // context.Cause(ctx) when the context's end stopped a rerun
}

// Run runs fn in a transaction on db and commits it, again from the start while the error
// that ended an attempt allows a rerun, up to cfg.MaxAttempts, pausing between attempts (at
// random between half and all of each pause); every attempt and pause is bounded by ctx.
func Run(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error, cfg Config) Result {
	pause := cfg.InitialBackoff
	for attempt := 1; ; attempt++ {
		rerun, err := cfg.once(ctx, db, opts, fn)
		switch {
		case err == nil:
			return Result{Attempts: attempt}
		case !rerun:
			return Result{Attempts: attempt, Err: err}
		case attempt >= cfg.MaxAttempts:
			return Result{Attempts: attempt, Rerunnable: true, Err: err}
		}
		if stop := sleepCtx(ctx, jitter(pause)); stop != nil {
			return Result{Attempts: attempt, Rerunnable: true, Err: err, Context: stop}
		}
		pause = min(2*pause, cfg.MaxBackoff)
		if cfg.OnRerun != nil {
			cfg.OnRerun(attempt, err)
		}
	}
}

// once runs one attempt: BeginTx, fn, COMMIT (or ROLLBACK when fn failed). It returns
// whether the error that ended it allows a rerun, and that error.
func (cfg *Config) once(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) (rerun bool, err error) {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		// Nothing ran. database/sql already tried other connections on driver.ErrBadConn.
		return errors.Is(err, driver.ErrBadConn) || cfg.rolledBack(err), err
	}
	ended := false
	defer func() {
		if !ended { // fn panicked
			tx.Rollback()
		}
	}()
	err = fn(tx)
	ended = true
	if err != nil {
		// The rollback's own error changes nothing: a transaction the server rolled back
		// answers it with nothing to do, and a connection that failed is closed, which rolls
		// the transaction back on the server.
		tx.Rollback()
		return cfg.rolledBack(err), err
	}
	return cfg.commitOutcome(tx.Commit())
}

// rolledBack reports an error of a statement (or of COMMIT) that says the whole transaction
// is gone and may run again: a role change, a server's rollback, or a server shutting down
// (1053: it refused the statement and takes the session, uncommitted, down with it; the next
// attempt goes to another node).
func (cfg *Config) rolledBack(err error) bool {
	return errors.Is(err, cfg.PrimaryChanged) || exception.TransactionRolledBack(err) || exception.ServerShutdown(err)
}

// commitOutcome sorts what COMMIT returned: committed (nil), did not commit (whether the error
// allows a rerun, and the error), or unknown (CommitUnknown, never rerun).
func (cfg *Config) commitOutcome(err error) (rerun bool, _ error) {
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, driver.ErrBadConn):
		// go-sql-driver wrote nothing of COMMIT (lbd keeps that meaning: design rule 3), and
		// database/sql closed the connection: the server rolls the transaction back.
		return true, err
	case errors.Is(err, cfg.PrimaryChanged), isServerAnswer(err):
		// The server answered COMMIT with an error: it did not commit.
		return cfg.rolledBack(err), err
	case err == context.Canceled, err == context.DeadlineExceeded, errors.Is(err, sql.ErrTxDone):
		// database/sql returns the bare context error, without calling the driver, when the
		// transaction's context ended before Commit; it has rolled the transaction back.
		// ErrTxDone: the transaction had already ended (fn committed or rolled it back, or
		// the context's end rolled it back).
		return false, err
	}
	return false, fmt.Errorf("%w: %w", cfg.CommitUnknown, err)
}

// isServerAnswer reports a MySQL ERR packet in err's tree.
func isServerAnswer(err error) bool {
	_, ok := errors.AsType[*mysql.MySQLError](err)
	return ok
}

// jitter returns a pause drawn at random between half and all of d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// sleepCtx pauses for d, or until ctx ends; it returns context.Cause(ctx) when ctx ended (even
// with d zero), nil otherwise.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
