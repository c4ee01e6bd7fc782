package lbd

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/clock"
	"github.com/lbd-go/lbd/internal/dsnparam"
	"github.com/lbd-go/lbd/internal/health"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/sqlclass"
)

// Clock tells the time and makes timers for lbd's loops; tests inject one to control time.
type Clock = clock.Clock

// Timer is the timer a Clock makes.
type Timer = clock.Timer

// Option changes a Connector's Config beyond what a DSN can carry, or overrides what it
// says: options run in order on the Connector's own copy of the Config, after ParseDSN, and
// the last word wins (go-sql-driver's Option shape). (*Connector).Config reports the result.
// An Option returns an error for a value it cannot accept.
type Option func(*Config) error

// WithLogger sets the logger for node state changes, warnings and logStats lines.
// Default: slog.Default(). Passwords never appear in what lbd logs.
func WithLogger(l *slog.Logger) Option {
	return func(c *Config) error {
		if l == nil {
			return fmt.Errorf("lbd: WithLogger: nil logger")
		}
		c.Logger = l
		return nil
	}
}

// WithClock replaces the wall clock of lbd's loops (probes, rebalancing, stats, fatal-error
// windows); for tests.
func WithClock(clk Clock) Option {
	return func(c *Config) error {
		if clk == nil {
			return fmt.Errorf("lbd: WithClock: nil clock")
		}
		c.clock = clk
		return nil
	}
}

// WithJitter replaces the random source that staggers the first probes: it must return a
// duration in [0, max). For tests.
func WithJitter(f func(max time.Duration) time.Duration) Option {
	return func(c *Config) error {
		if f == nil {
			return fmt.Errorf("lbd: WithJitter: nil function")
		}
		c.jitter = f
		return nil
	}
}

// WithRand replaces the random source that sets where a Connector's turns among equally loaded
// proxies start: f(n) must return a number in [0, n) (one outside is folded into it) and is
// called when a list of nodes is first trusted (at start, or the first list of a node source).
// The default draws a uniformly random start per process and moves on by one proxy per
// Connector within it. For tests.
func WithRand(f func(n int) int) Option {
	return func(c *Config) error {
		if f == nil {
			return fmt.Errorf("lbd: WithRand: nil function")
		}
		c.randN = f
		return nil
	}
}

// WithExceptionSorter sets the sorter that decides which errors are fatal to a connection,
// overriding the exceptionSorter DSN parameter.
func WithExceptionSorter(s exception.Sorter) Option {
	return func(c *Config) error {
		if s == nil {
			return fmt.Errorf("lbd: WithExceptionSorter: nil sorter")
		}
		c.Sorter = s
		return nil
	}
}

// durationOption builds an Option that sets one positive duration.
func durationOption(name string, d time.Duration, set func(*Config, time.Duration)) Option {
	return func(c *Config) error {
		if d <= 0 {
			return fmt.Errorf("lbd: %s: %v is not a positive duration", name, d)
		}
		set(c, d)
		return nil
	}
}

// WithCheckHealthInterval sets the time between probes of one node (checkHealthIntervalSeconds).
func WithCheckHealthInterval(d time.Duration) Option {
	return durationOption("WithCheckHealthInterval", d, func(c *Config, d time.Duration) { c.CheckHealthInterval = d })
}

// WithCheckHealthTimeout bounds one probe (checkHealthTimeoutMillis); the Connector caps it at
// the probe interval (see Config.CheckHealthTimeout).
func WithCheckHealthTimeout(d time.Duration) Option {
	return durationOption("WithCheckHealthTimeout", d, func(c *Config, d time.Duration) { c.CheckHealthTimeout = d })
}

// WithCheckBalanceInterval sets the time between rebalancing rounds (checkBalanceIntervalSeconds).
func WithCheckBalanceInterval(d time.Duration) Option {
	return durationOption("WithCheckBalanceInterval", d, func(c *Config, d time.Duration) { c.CheckBalanceInterval = d })
}

// WithStatsInterval sets how often logStats=true logs. Default DefaultStatsInterval.
func WithStatsInterval(d time.Duration) Option {
	return durationOption("WithStatsInterval", d, func(c *Config, d time.Duration) { c.StatsInterval = d })
}

// WithFatalErrorWindow sets the window over which fatal errors are counted against a node
// (fatalErrorWindowSeconds).
func WithFatalErrorWindow(d time.Duration) Option {
	return durationOption("WithFatalErrorWindow", d, func(c *Config, d time.Duration) { c.FatalErrorWindow = d })
}

// WithWarmup sets the slow-start window of a node added at run time or recovered
// (warmupSeconds, default DefaultWarmup); 0 turns slow start off. A negative d is an error.
func WithWarmup(d time.Duration) Option {
	return func(c *Config) error {
		if d < 0 {
			return fmt.Errorf("lbd: WithWarmup: %v is negative; 0 turns slow start off", d)
		}
		c.Warmup = d
		return nil
	}
}

// WithRecoverCheckCount sets how many consecutive good probes bring a down node back
// (recoverCheckCount); n must be from 1 to 1000.
func WithRecoverCheckCount(n int) Option {
	return func(c *Config) error {
		if n < 1 || n > dsnparam.MaxCount {
			return fmt.Errorf("lbd: WithRecoverCheckCount: %d is not from 1 to %d", n, dsnparam.MaxCount)
		}
		c.RecoverCheckCount = n
		return nil
	}
}

// WithFatalErrorThreshold sets how many fatal errors within the window take a node down
// (fatalErrorThreshold); n must be from 1 to 1000.
func WithFatalErrorThreshold(n int) Option {
	return func(c *Config) error {
		if n < 1 || n > dsnparam.MaxCount {
			return fmt.Errorf("lbd: WithFatalErrorThreshold: %d is not from 1 to %d", n, dsnparam.MaxCount)
		}
		c.FatalErrorThreshold = n
		return nil
	}
}

// WithTarget sets which roles new connections may go to (target); see Target.
func WithTarget(t Target) Option {
	return func(c *Config) error {
		if t > TargetPreferReplica {
			return fmt.Errorf("lbd: WithTarget: %d is not a Target; use one of the Target constants", t)
		}
		c.Target = t
		return nil
	}
}

// WithRoleCheck sets how each node's role is found (roleCheck): "none", "mysql", "oceanbase",
// "tidb", "galera", "group-replication" or one SELECT of your own; see Config.RoleCheck.
func WithRoleCheck(check string) Option {
	return func(c *Config) error {
		if _, err := role.ParseCheck(check); err != nil {
			return fmt.Errorf("lbd: WithRoleCheck: %w", err)
		}
		c.RoleCheck = check
		return nil
	}
}

// WithMaxFailoverWaiters sets how many Connects may wait for a node their target accepts at
// once (maxFailoverWaiters); 0 lets none wait, a negative n is an error.
func WithMaxFailoverWaiters(n int) Option {
	return func(c *Config) error {
		if n < 0 {
			return fmt.Errorf("lbd: WithMaxFailoverWaiters: %d is negative", n)
		}
		c.MaxFailoverWaiters = n
		return nil
	}
}

// WithRetryReads turns read retries on or off (retryReads, default on: DefaultRetryReads). With
// it on, a read
// whose node failed it before any row reached the caller runs once more on another node: the
// text must be one statement that sqlclass proves both replica-safe and free of session
// effects (lbd.RetryableRead, and only functions known to read nothing the session holds, so
// no stored function that might write); the failure must be the node's (a lost connection, a
// protocol violation, a timeout of the DSN's own, or a server error the exception sorter
// judges fatal), not the caller's context and not an error every node would give; and the
// server's own status flags before the statement must show autocommit on and no transaction
// open, with no transaction begun through database/sql and, in statement mode, no session
// state pinning the logical connection. A write, a statement whose outcome is unknown, a
// statement inside a transaction, or a read that already returned rows never runs again.
//
// The read runs again once, on another node when one is up (else on a new connection to the
// same node; never on the connection that failed): in statement mode on a physical connection
// borrowed there as for any statement, in connection mode on a connection made for it alone and
// closed with its rows, while the caller's pooled connection is retired. Each run again is
// taken from the retry budget (WithRetryBudget); with the budget spent the caller gets the
// failure.
//
// MaxScale retries such reads by default (retry_failed_reads); TiDB's retries of statements
// whose outcome was unknown lost updates (Jepsen, TiDB 2.1.7), which is why only proven reads
// qualify here.
func WithRetryReads(on bool) Option {
	return func(c *Config) error { c.RetryReads = on; return nil }
}

// WithRetryBudget sets the retry budget (retryBudgetPercent, retryBudgetPerSecond): over any
// 10 s, lbd runs at most percent retries per 100 statements answered plus perSecond retries
// per second. Negative values, or values above 1000 and 1 000 000, are errors.
func WithRetryBudget(percent, perSecond int) Option {
	return func(c *Config) error {
		if percent < 0 || percent > dsnparam.MaxRetryBudgetPercent || perSecond < 0 || perSecond > dsnparam.MaxRetryBudgetPerSecond {
			return fmt.Errorf("lbd: WithRetryBudget(%d, %d): percent must be from 0 to %d and perSecond from 0 to %d", percent, perSecond, dsnparam.MaxRetryBudgetPercent, dsnparam.MaxRetryBudgetPerSecond)
		}
		c.RetryBudgetPercent, c.RetryBudgetPerSecond = percent, perSecond
		return nil
	}
}

// WithFailoverTimeout sets how long a Connect waits for a node its target accepts
// (failoverTimeoutMillis); 0 fails at once, a negative d is an error.
func WithFailoverTimeout(d time.Duration) Option {
	return func(c *Config) error {
		if d < 0 {
			return fmt.Errorf("lbd: WithFailoverTimeout: %v is negative", d)
		}
		c.FailoverTimeout = d
		return nil
	}
}

// WithSingleWriter keeps one primary at a time, the others serving as replicas (singleWriter);
// see Config.SingleWriter.
func WithSingleWriter(on bool) Option {
	return func(c *Config) error { c.SingleWriter = on; return nil }
}

// WithReadWriteSplit turns statement mode's read/write split on or off (readWriteSplit); see
// Config.ReadWriteSplit.
func WithReadWriteSplit(on bool) Option {
	return func(c *Config) error { c.ReadWriteSplit = on; return nil }
}

// WithReadAfterWrite sets how long a scope's reads go to the primary after its write
// (readAfterWriteMillis); 0 turns read-your-writes off, a negative d is an error.
func WithReadAfterWrite(d time.Duration) Option {
	return func(c *Config) error {
		if d < 0 {
			return fmt.Errorf("lbd: WithReadAfterWrite: %v is negative", d)
		}
		c.ReadAfterWrite = d
		return nil
	}
}

// WithPrimaryReads lets the read/write split send reads proven replica-safe to the primary as
// to any replica (primaryReads); see Config.PrimaryReads.
func WithPrimaryReads(on bool) Option {
	return func(c *Config) error { c.PrimaryReads = on; return nil }
}

// WithRoutingHints lets a leading /* lbd:primary */ or /* lbd:replica */ comment choose where
// one statement goes under the read/write split (routingHints); see Config.RoutingHints.
func WithRoutingHints(on bool) Option {
	return func(c *Config) error { c.RoutingHints = on; return nil }
}

// The retry budget's defaults are Finagle's (RetryBudget: 20 % of requests, a reserve of 10
// retries a second, over a 10 s window). A healthy fleet never comes near them; they matter
// when everything fails at once, where retries without a bound multiply the load on the
// nodes still standing (field reports of unbounded retry loops in database wrappers: minutes
// of blocked callers).
const (
	DefaultRetryBudgetPercent   = 20
	DefaultRetryBudgetPerSecond = 10
)

// DefaultRetryReads is retryReads' default: on. Measured under 16 workers reading through three
// proxies, one of them killed: 2-6 reads failed without it (those in flight), none with it, at
// the same detection and return times; it costs nothing until a statement fails. What it runs
// again is proven a read and outside any transaction, so running it twice changes nothing.
const DefaultRetryReads = true

// ErrRetryBudget is wrapped by the error a Connect returns when it would have dialed a node
// marked down (panic mode), or waited for a node its target accepts (a switchover), and the
// retry budget (retryBudgetPercent, retryBudgetPerSecond) was spent: lbd already runs as many
// retries as the budget allows, so this one fails at once. A read that retryReads would have
// run again, and a statement a demoted primary refused, get their own error instead, with
// the budget's refusal counted in Stats.Retries. Back off, or raise the budget if the
// statements that failed this way could have been served.
var ErrRetryBudget = health.ErrRetryBudget

// RetryStats counts what lbd ran again on its own, by kind, and what the retry budget refused.
type RetryStats struct {
	Reads      uint64 // reads run again after their node failed them (retryReads)
	PanicDials uint64 // dials to a node marked down: none was up (panic mode), or too few (panicThresholdPercent)
	Waits      uint64 // Connects that waited for a node their target accepts (a switchover)
	Refusals   uint64 // statements a demoted primary, or a server shutting down (1053), refused; handed back to run again
	Prepares   uint64 // prepares a node failed, handed back to database/sql to prepare again (retryReads)
	Refused    uint64 // retries the budget refused: each failed at once instead
}

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
