package lbd

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lbd-go/lbd/internal/txrun"
)

// Defaults of TxRetryPolicy.
const (
	// DefaultTxMaxAttempts is how many times RunTx runs a transaction at most: the first run and
	// two reruns. A deadlock victim or a transaction caught by a switchover usually succeeds on
	// its first rerun; a third failure in a row says the contention or the switchover lasts, and
	// the caller should hear of it.
	DefaultTxMaxAttempts = 3
	// DefaultTxInitialBackoff is the pause before the first rerun; each further pause doubles,
	// up to DefaultTxMaxBackoff. Each pause is drawn at random between half and all of it, so
	// that the transactions of one deadlock do not meet again at the same instant.
	DefaultTxInitialBackoff = 20 * time.Millisecond
	// DefaultTxMaxBackoff bounds one pause between attempts.
	DefaultTxMaxBackoff = time.Second
)

// ErrCommitUnknown is wrapped by the error RunTx returns when COMMIT was sent and its answer
// never came (the connection broke, the proxy answered garbage, or the context ended while the
// answer was awaited): the server may have committed the transaction or not. RunTx does not run
// the transaction again, since that could apply it twice. The caller must find out (read back a
// row the transaction wrote, an idempotency key) or report the uncertainty. The cause is wrapped
// too (errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, context.Canceled), ...).
var ErrCommitUnknown = errors.New("lbd: the outcome of COMMIT is unknown: the connection failed after COMMIT was sent, so the transaction may or may not have committed; it was not run again")

// TxRetryPolicy says how often and how soon RunTx runs a transaction again. Its zero value is
// the default policy, the one the function RunTx uses; set only the fields to change. It is a
// value: one policy may be shared by any number of goroutines.
//
// Field names follow gRPC's retry policy (maxAttempts, initialBackoff, maxBackoff).
type TxRetryPolicy struct {
	// MaxAttempts is how many times the transaction runs at most, the first run included
	// (default DefaultTxMaxAttempts, 3, when zero or negative). 1 runs it once and only
	// classifies its error.
	MaxAttempts int
	// InitialBackoff is the pause before the first rerun (default DefaultTxInitialBackoff,
	// 20 ms, when zero; no pause when negative). Each further pause doubles, up to MaxBackoff,
	// and each is drawn at random between half and all of its value. A pause ends early, and
	// RunTx returns, when the context ends.
	InitialBackoff time.Duration
	// MaxBackoff bounds one pause, the first included (default DefaultTxMaxBackoff, 1 s, when
	// zero or negative).
	MaxBackoff time.Duration
	// OnRerun, when set, is called on RunTx's goroutine just before each rerun, with the
	// number of the attempt that failed (from 1) and its error: for logs and metrics. It must
	// not block.
	OnRerun func(attempt int, err error)
}

// RunTx runs fn in a transaction on db (db.BeginTx(ctx, opts)) and commits it. When the
// transaction fails with an error that says the whole transaction can run again from its start,
// RunTx rolls it back and runs fn again in a new transaction, up to DefaultTxMaxAttempts (3)
// times in all, pausing 20 ms, then 40 ms, ... (at random between half and all of each pause)
// between attempts; TxRetryPolicy.RunTx takes other limits. It returns nil once a COMMIT
// succeeded.
//
// The errors that allow a rerun, each because it proves that nothing of the transaction was
// committed and that the server keeps none of it:
//
//   - ErrPrimaryChanged: a statement of the transaction (COMMIT included) met a node that is no
//     longer the primary; lbd retired the connection, and the rerun goes to the new primary
//     (see the design notes, "Roles and switchover").
//   - 1213 ER_LOCK_DEADLOCK, and any server error with SQLSTATE 40001 (serialization failure):
//     the server rolled the whole transaction back (exception.TransactionRolledBack has the
//     sources). 1205 ER_LOCK_WAIT_TIMEOUT does not allow a rerun: by default MySQL and MariaDB
//     roll back only the statement that waited (innodb_rollback_on_timeout=OFF) and keep the
//     transaction open, and the error does not say which happened; RunTx returns it.
//   - driver.ErrBadConn from BeginTx (after database/sql's own retries) or from COMMIT:
//     go-sql-driver returns it only when it wrote nothing of the command, database/sql then
//     closes the connection, and a server rolls back the open transaction of a session that
//     ends. From any other statement of the transaction it is returned, not rerun.
//
// fn is the caller's code and RunTx replays nothing behind its back: it calls fn again. So fn
// must be safe to run more than once: everything it does goes through tx, and it has no effect
// outside the transaction (no message sent, no counter of the program's own bumped) that a
// failed attempt would leave behind, or it undoes such effects itself. fn must return the
// error of a failed statement (wrapped is fine: RunTx looks with errors.Is and errors.As), and
// must neither commit nor roll back tx. An fn that swallowed a deadlock error and returned nil
// would have RunTx commit an empty transaction. A panic in fn rolls the transaction back and
// goes on up.
//
// The context bounds every attempt and every pause: once it ends, no attempt begins.
//
// Errors: nil, or a *TxError, which says how many attempts ran and wraps the error that ended
// the last one (errors.Is and errors.As see through it):
//
//   - an error that allows no rerun (fn's own, a failed BeginTx, a server's answer to COMMIT):
//     the transaction was rolled back, and the error is fn's (or BeginTx's, or COMMIT's), as it
//     was returned;
//   - every attempt failed with an error that allows a rerun: TxError.Rerunnable, and the last
//     attempt's error;
//   - the context ended before a rerun: TxError.Context holds context.Cause(ctx), and
//     errors.Is(err, context.Canceled) (or DeadlineExceeded) holds;
//   - COMMIT was sent and the connection failed before its answer: ErrCommitUnknown with the
//     cause; the transaction may have committed and was not run again. A COMMIT that the
//     server answered with an error, or that database/sql refused to send (the context had
//     ended), did not commit.
//
// Prior art: cockroach-go's crdb.ExecuteTx (a retry loop around a caller's function, and an
// "ambiguous commit" error of its own), the MySQL Reference Manual's advice to retry a
// transaction that InnoDB rolled back for a deadlock.
func RunTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	return TxRetryPolicy{}.RunTx(ctx, db, opts, fn)
}

// RunTx is the function RunTx with this policy's limits.
func (p TxRetryPolicy) RunTx(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error) error {
	p = p.withDefaults()
	r := txrun.Run(ctx, db, opts, fn, txrun.Config{MaxAttempts: p.MaxAttempts, InitialBackoff: p.InitialBackoff,
		MaxBackoff: p.MaxBackoff, OnRerun: p.OnRerun, PrimaryChanged: ErrPrimaryChanged, CommitUnknown: ErrCommitUnknown})
	if r.Err == nil {
		return nil
	}
	return &TxError{Attempts: r.Attempts, MaxAttempts: p.MaxAttempts, Rerunnable: r.Rerunnable, Err: r.Err, Context: r.Context}
}

func (p TxRetryPolicy) withDefaults() TxRetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultTxMaxAttempts
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultTxMaxBackoff
	}
	switch {
	case p.InitialBackoff == 0:
		p.InitialBackoff = DefaultTxInitialBackoff
	case p.InitialBackoff < 0:
		p.InitialBackoff = 0
	}
	p.InitialBackoff = min(p.InitialBackoff, p.MaxBackoff)
	return p
}

// TxError is the error RunTx returns: the error that ended the last attempt, and how many
// attempts ran. errors.Is and errors.As see through it to Err (and to Context when set), so
// errors.Is(err, lbd.ErrCommitUnknown), errors.As(err, &mysqlErr) and the checks for fn's own
// errors work on it.
type TxError struct {
	// Attempts is how many transactions RunTx began or tried to begin, from 1 to MaxAttempts.
	Attempts int
	// MaxAttempts is the policy's limit (TxRetryPolicy.MaxAttempts with its default applied).
	MaxAttempts int
	// Rerunnable is true when Err allows the transaction to run again, but the attempts ran
	// out or the context ended first.
	Rerunnable bool
	// Err is the error that ended the last attempt: fn's, BeginTx's or COMMIT's, as returned
	// (ErrCommitUnknown wrapping the cause when COMMIT's outcome is unknown).
	Err error
	// Context is context.Cause of RunTx's context when its end stopped a rerun; nil otherwise.
	Context error
}

// Error says how many attempts ran and why RunTx stopped, and quotes the last error.
func (e *TxError) Error() string {
	switch {
	case e.Context != nil:
		return fmt.Sprintf("lbd: transaction stopped after attempt %d of %d by the context (%v); the attempt had failed with an error that allows a rerun: %v", e.Attempts, e.MaxAttempts, e.Context, e.Err)
	case e.Rerunnable:
		return fmt.Sprintf("lbd: transaction failed %d times of %d allowed, each with an error that allows a rerun; the last: %v", e.Attempts, e.MaxAttempts, e.Err)
	}
	return fmt.Sprintf("lbd: transaction failed on attempt %d of %d: %v", e.Attempts, e.MaxAttempts, e.Err)
}

// Unwrap returns Err, and Context when it is set.
func (e *TxError) Unwrap() []error {
	if e.Context != nil {
		return []error{e.Err, e.Context}
	}
	return []error{e.Err}
}
