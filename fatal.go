package lbd

import (
	"errors"
	"sync"
	"time"

	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/errtree"
	"github.com/lbd-go/lbd/internal/physical"
)

// onConnError is told every error a connection returns. A fatal error (per the exception
// sorter) retires the connection: database/sql drops it at its return, so it is never reused.
// FatalErrorThreshold fatal errors on one node within FatalErrorWindow take the node down and
// bring its probe forward.
//
// A protocol violation (ErrProtocol) is fatal whatever the sorter says.
func (c *Connector) onConnError(p *physical.Conn, err error) {
	if !errors.Is(err, ErrProtocol) && !c.cfg.Sorter.IsFatal(err) {
		return
	}
	p.MarkRetired(physical.Fatal)
	n := nodeOf(p.Node())
	now := c.cfg.clock.Now()
	c.recent.add(err, n.addr, now)
	c.table.Fatal(n.tn, now, err)
	n.probeForTraffic()
}

// ExceptionSorter returns the sorter the Connector judges errors with (WithExceptionSorter, or
// the one the exceptionSorter DSN parameter names).
func (c *Connector) ExceptionSorter() exception.Sorter { return c.cfg.Sorter }

// NodeOfError reports the node whose connection returned err (or an error err wraps) and had it
// judged fatal within the last FatalErrorWindow. Errors are matched by identity (==), so it
// answers for the very error value a caller got back; ok is false when no such error was
// recorded, or when the same value came from two nodes (sentinels such as
// mysql.ErrInvalidConn). ORM integrations use it to name the node in their logs.
func (c *Connector) NodeOfError(err error) (addr string, ok bool) {
	return c.recent.lookup(err, c.cfg.clock.Now().Add(-c.cfg.FatalErrorWindow))
}

// recentFatal remembers the latest fatal errors and their nodes, a small ring.
type recentFatal struct {
	mu      sync.Mutex
	entries [64]fatalEntry
	next    int
}

type fatalEntry struct {
	err  error
	addr string
	at   time.Time
}

func (r *recentFatal) add(err error, addr string, at time.Time) {
	r.mu.Lock()
	r.entries[r.next] = fatalEntry{err: err, addr: addr, at: at}
	r.next = (r.next + 1) % len(r.entries)
	r.mu.Unlock()
}

func (r *recentFatal) lookup(err error, since time.Time) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	found := ""
	for _, e := range r.entries {
		if e.err == nil || e.at.Before(since) || !errtree.Contains(err, e.err) {
			continue
		}
		if found != "" && found != e.addr {
			return "", false
		}
		found = e.addr
	}
	return found, found != ""
}
