package lbd

import (
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/rebalance"
)

// The Connector's loops: the rebalancer, warm-up and load ticks, and the stats logger; the
// prober, the transition loop and the stall loop are internal/health's. startLoops starts them;
// Close stops them and waits.

// startLoops starts the rebalancer, health's prober and loops and, with logStats, the stats
// logger.
func (c *Connector) startLoops() error {
	var err error
	c.rebal, err = rebalance.New(rebalance.Config{Table: c.table, LocalZone: c.cfg.LocalZone, StatementMode: c.cfg.Balance == BalanceStatement,
		Interval: c.cfg.CheckBalanceInterval, Clock: c.cfg.clock, Logger: c.cfg.Logger})
	if err != nil {
		return err
	}
	if err := c.health.Start(); err != nil {
		return err
	}
	c.rebal.Start()
	if c.table.WarmupStep() > 0 {
		// The node table reads no clock of its own: a tick here keeps pick and release free
		// of time, and a node warming up (slow start) rises in steps of 5 % of the window.
		c.every(max(c.table.WarmupStep(), minWarmupStep), func() { c.table.Tick(c.cfg.clock.Now()) })
	}
	if c.cfg.BalancePolicy == LeastLoad {
		// The latency estimates measure real round trips, so the table is given the monotonic
		// time, not the Connector's clock; the clock only schedules the ticks.
		// A node slowed further brings the rebalancer's round forward (at most one a second),
		// so that pooled connections leave a slow proxy within seconds, not a whole interval.
		c.every(nodetable.LoadTick, func() {
			if c.table.TickLoad(time.Now()) {
				c.rebal.Trigger()
			}
		})
	}
	if c.cfg.LogStats {
		c.every(c.cfg.StatsInterval, c.logStats)
	}
	return nil
}

// every runs fn every d, on a goroutine of its own, until Close: the Connector's loops that
// only tick (warm-up, load estimates, logStats).
func (c *Connector) every(d time.Duration, fn func()) {
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		t := c.cfg.clock.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C():
			}
			fn()
			t.Reset(d)
		}
	}()
}

// minWarmupStep bounds how often the warm-up loop ticks, for windows set in code below a
// second (WithWarmup): finer steps buy nothing and would keep a core busy.
const minWarmupStep = 10 * time.Millisecond
