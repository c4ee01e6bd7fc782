package dsnparam

import (
	"fmt"
	"strconv"
	"time"
)

// Upper bounds of numeric parameters: far beyond any sensible setting, well inside what a
// time.Duration or an allocation can hold.
const (
	MaxSeconds = 366 * 24 * 3600 // a year
	MaxMillis  = 3600 * 1000     // an hour
	MaxCount   = 1000
	// MaxFailoverWaiters bounds maxFailoverWaiters: far above any pool, below anything that
	// could overflow.
	MaxFailoverWaiters = 1_000_000
	// MaxRetryBudgetPercent lets retries be up to ten times the statements; beyond that a
	// budget bounds nothing.
	MaxRetryBudgetPercent = 1000
	// MaxRetryBudgetPerSecond bounds retryBudgetPerSecond as MaxFailoverWaiters bounds its own.
	MaxRetryBudgetPerSecond = 1_000_000
)

// Bounded reads a whole number from 0 to limit into n.
func Bounded(v string, limit int, n *int) error {
	x, err := strconv.Atoi(v)
	if err != nil || x < 0 || x > limit {
		return fmt.Errorf("must be a whole number from 0 to %d", limit)
	}
	*n = x
	return nil
}

// Seconds reads a whole number of seconds from 1 to MaxSeconds into d.
func Seconds(v string, d *time.Duration) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > MaxSeconds {
		return fmt.Errorf("must be a whole number of seconds from 1 to %d", MaxSeconds)
	}
	*d = time.Duration(n) * time.Second
	return nil
}

// Millis reads a whole number of milliseconds from 1 to MaxMillis into d.
func Millis(v string, d *time.Duration) error {
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 || n > MaxMillis {
		return fmt.Errorf("must be a whole number of milliseconds from 1 to %d", MaxMillis)
	}
	*d = time.Duration(n) * time.Millisecond
	return nil
}

// PositiveInt reads a whole number from 1 to MaxCount into n.
func PositiveInt(v string, n *int) error {
	i, err := strconv.Atoi(v)
	if err != nil || i <= 0 || i > MaxCount {
		return fmt.Errorf("must be a whole number from 1 to %d", MaxCount)
	}
	*n = i
	return nil
}

// Bool reads true or false (as strconv.ParseBool spells them) into b.
func Bool(v string, b *bool) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("must be true or false")
	}
	*b = x
	return nil
}

// FormatSeconds writes d in whole seconds, rounding a sub-second option value up so that the
// written DSN never asks for a shorter interval than the one configured; it also reports
// whether d differs from the default def.
func FormatSeconds(d, def time.Duration) (string, bool) {
	s := (d + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(s), 10), d != def
}

// FormatMillis is FormatSeconds in whole milliseconds.
func FormatMillis(d, def time.Duration) (string, bool) {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatInt(int64(ms), 10), d != def
}
