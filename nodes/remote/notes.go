package remote

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// notes logs the source's conditions, each change once: a config-server that keeps failing
// the same way is logged when it starts failing and when it answers again, not at every poll.
// Every subject starts in the good condition "". Only Start and then the refresh goroutine
// use it, so it needs no lock.
type notes struct {
	log    *slog.Logger
	schema string
	last   map[string]string
}

func newNotes(log *slog.Logger, schema string) *notes {
	return &notes{log: log, schema: schema, last: map[string]string{}}
}

// change records cond for subject and returns the condition before; changed is false when
// they are equal.
func (n *notes) change(subject, cond string) (before string, changed bool) {
	before = n.last[subject]
	if cond == "" {
		delete(n.last, subject)
	} else {
		n.last[subject] = cond
	}
	return before, before != cond
}

func (n *notes) emit(level slog.Level, msg string, args ...any) {
	n.log.Log(context.Background(), level, msg, append([]any{"schema", n.schema}, args...)...)
}

// roundCond is the condition of a round in which no config-server gave a usable list: every
// server's condition, in a stable order.
func roundCond(errs []*ServerError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Server + "=" + e.cond
	}
	slices.Sort(parts)
	return strings.Join(parts, "|")
}

func joinErrors(errs []*ServerError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// roundFailed notes a round in which no config-server gave a usable list for the set named
// set ("normal" or "default"): the current list is kept.
func (n *notes) roundFailed(set string, errs []*ServerError) {
	for _, e := range errs {
		n.change("server "+e.Server, e.cond)
	}
	if _, changed := n.change("round "+set, roundCond(errs)); changed {
		n.emit(slog.LevelWarn, "lbd: no config-server gave a usable node list; keeping the current list",
			"set", set, "error", joinErrors(errs))
	}
}

// roundAnswered notes a round that got a usable answer from server, after the failures in errs
// (servers tried before it).
func (n *notes) roundAnswered(set, server string, errs []*ServerError) {
	if before, changed := n.change("round "+set, ""); changed && before != "" {
		n.emit(slog.LevelInfo, "lbd: config-server answers again", "set", set, "server", server)
	}
	n.change("server "+server, "")
	for _, e := range errs {
		if _, changed := n.change("server "+e.Server, e.cond); changed {
			n.emit(slog.LevelWarn, "lbd: config-server failed; the next one answered",
				"set", set, "server", e.Server, "error", e.Error(), "answered_by", server)
		}
	}
}

// startedFromCache notes that Start used the disk cache because every config-server failed;
// the failures count as already logged.
func (n *notes) startedFromCache(errs []*ServerError, file string, saved time.Time, count int) {
	for _, e := range errs {
		n.change("server "+e.Server, e.cond)
	}
	n.change("round az", roundCond(errs))
	n.emit(slog.LevelWarn, "lbd: every config-server failed; starting from the node list cached by an earlier run",
		"error", joinErrors(errs), "cache_file", file, "cached_at", saved.Format(time.RFC3339), "nodes", count)
}

func (n *notes) ipUnknown(err error, retry time.Duration) {
	if _, changed := n.change("ip", "unknown"); changed {
		n.emit(slog.LevelWarn, "lbd: cannot tell the local address to report to the config-server; it will use the request's source address",
			"error", err.Error(), "retry_in", retry.String())
	}
}

func (n *notes) ipKnown(ip string) {
	if before, _ := n.change("ip", ""); before != "" {
		n.emit(slog.LevelInfo, "lbd: found the local address to report to the config-server", "ip", ip)
	}
}

func (n *notes) cacheWrite(err error, dir string) {
	cond := ""
	if err != nil {
		cond = "failed"
	}
	before, changed := n.change("cache write", cond)
	switch {
	case !changed:
	case err != nil:
		n.emit(slog.LevelWarn, "lbd: cannot write the config-server node list cache", "dir", dir, "error", err.Error())
	case before != "":
		n.emit(slog.LevelInfo, "lbd: the config-server node list cache is written again", "dir", dir)
	}
}

// once logs msg when subject enters cond, and nothing while it stays there.
func (n *notes) once(subject, cond string, level slog.Level, msg string, args ...any) {
	if _, changed := n.change(subject, cond); changed && cond != "" {
		n.emit(level, msg, args...)
	}
}
