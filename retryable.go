package lbd

import "github.com/lbd-go/lbd/internal/sqlclass"

// RetryableRead reports whether query is a single statement that only reads, so that after it
// failed on one physical connection it can run again on another and give the answer the first
// run would have given. Integrations that retry reads outside database/sql (gormplugin's
// RetryReads) ask it before running a failed statement again.
//
// It is true only for one SELECT, SHOW, DESC or DESCRIBE statement (not DESC ANALYZE, not
// EXPLAIN or WITH) with no INTO, no second statement, no executable comment around its first
// keyword and no effect on the session: no user variable, lock, transaction control, and
// nothing read from the previous statement (FOUND_ROWS(), LAST_INSERT_ID(), SHOW WARNINGS) or
// left for the next (SQL_CALC_FOUND_ROWS, NEXTVAL()). Anything it cannot prove is false. It
// cannot see inside stored functions, which may write. It never panics and does not allocate.
func RetryableRead(query string) bool { return sqlclass.RetryableRead(query) }
