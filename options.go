package lbd

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/clock"
	"github.com/lbd-go/lbd/nodes"
)

// Clock tells the time and makes timers for lbd's loops; tests inject one to control time.
type Clock = clock.Clock

// Timer is the timer a Clock makes.
type Timer = clock.Timer

// Option configures a Connector beyond what a DSN can carry. Options win over DSN parameters.
type Option func(*options) error

type options struct {
	logger         *slog.Logger
	clock          clock.Clock
	jitter         func(max time.Duration) time.Duration
	sorter         exception.Sorter
	source         nodes.Source
	statsInterval  time.Duration
	healthInterval time.Duration
	healthTimeout  time.Duration
	balanceIntvl   time.Duration
	recoverCount   int
	fatalThreshold int
	fatalWindow    time.Duration
	balance        BalanceMode
	balanceSet     bool // WithBalance was given
}

// DefaultStatsInterval is how often logStats=true logs (lb-driver logs every minute).
const DefaultStatsInterval = time.Minute

// WithLogger sets the logger for node state changes, warnings and logStats lines.
// Default: slog.Default(). Passwords never appear in what lbd logs.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return fmt.Errorf("lbd: WithLogger: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithClock replaces the wall clock of lbd's loops (probes, rebalancing, stats, fatal-error
// windows); for tests.
func WithClock(c Clock) Option {
	return func(o *options) error {
		if c == nil {
			return fmt.Errorf("lbd: WithClock: nil clock")
		}
		o.clock = c
		return nil
	}
}

// WithJitter replaces the random source that staggers the first probes: it must return a
// duration in [0, max). For tests.
func WithJitter(f func(max time.Duration) time.Duration) Option {
	return func(o *options) error {
		if f == nil {
			return fmt.Errorf("lbd: WithJitter: nil function")
		}
		o.jitter = f
		return nil
	}
}

// WithExceptionSorter sets the sorter that decides which errors are fatal to a connection,
// overriding the exceptionSorter DSN parameter.
func WithExceptionSorter(s exception.Sorter) Option {
	return func(o *options) error {
		if s == nil {
			return fmt.Errorf("lbd: WithExceptionSorter: nil sorter")
		}
		o.sorter = s
		return nil
	}
}

// durationOption builds an Option that sets one positive duration.
func durationOption(name string, d time.Duration, set func(*options, time.Duration)) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("lbd: %s: %v is not a positive duration", name, d)
		}
		set(o, d)
		return nil
	}
}

// WithCheckHealthInterval sets the time between probes of one node (checkHealthIntervalSeconds).
func WithCheckHealthInterval(d time.Duration) Option {
	return durationOption("WithCheckHealthInterval", d, func(o *options, d time.Duration) { o.healthInterval = d })
}

// WithCheckHealthTimeout bounds one probe (checkHealthTimeoutMillis); capped at the interval.
func WithCheckHealthTimeout(d time.Duration) Option {
	return durationOption("WithCheckHealthTimeout", d, func(o *options, d time.Duration) { o.healthTimeout = d })
}

// WithCheckBalanceInterval sets the time between rebalancing rounds (checkBalanceIntervalSeconds).
func WithCheckBalanceInterval(d time.Duration) Option {
	return durationOption("WithCheckBalanceInterval", d, func(o *options, d time.Duration) { o.balanceIntvl = d })
}

// WithStatsInterval sets how often logStats=true logs. Default DefaultStatsInterval.
func WithStatsInterval(d time.Duration) Option {
	return durationOption("WithStatsInterval", d, func(o *options, d time.Duration) { o.statsInterval = d })
}

// WithFatalErrorWindow sets the window over which fatal errors are counted against a node
// (fatalErrorWindowSeconds).
func WithFatalErrorWindow(d time.Duration) Option {
	return durationOption("WithFatalErrorWindow", d, func(o *options, d time.Duration) { o.fatalWindow = d })
}

// WithRecoverCheckCount sets how many consecutive good probes bring a down node back
// (recoverCheckCount); n must be from 1 to 1000.
func WithRecoverCheckCount(n int) Option {
	return func(o *options) error {
		if n < 1 || n > maxCount {
			return fmt.Errorf("lbd: WithRecoverCheckCount: %d is not from 1 to %d", n, maxCount)
		}
		o.recoverCount = n
		return nil
	}
}

// WithFatalErrorThreshold sets how many fatal errors within the window take a node down
// (fatalErrorThreshold); n must be from 1 to 1000.
func WithFatalErrorThreshold(n int) Option {
	return func(o *options) error {
		if n < 1 || n > maxCount {
			return fmt.Errorf("lbd: WithFatalErrorThreshold: %d is not from 1 to %d", n, maxCount)
		}
		o.fatalThreshold = n
		return nil
	}
}
