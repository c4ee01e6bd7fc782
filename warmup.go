package lbd

import "time"

// minWarmupStep bounds how often the warm-up loop ticks, for windows set in code below a
// second (WithWarmup): finer steps buy nothing and would keep a core busy.
const minWarmupStep = 10 * time.Millisecond

// warmupLoop tells the node table the time every Warmup/20 until Close, so that the weight of a
// node warming up (slow start) rises in steps of 5% of the window. The table reads no clock of
// its own: a tick here keeps pick and release free of time.
func (c *Connector) warmupLoop() {
	defer c.loops.Done()
	step := max(c.table.WarmupStep(), minWarmupStep)
	t := c.cfg.clock.NewTimer(step)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
		c.table.Tick(c.cfg.clock.Now())
		t.Reset(step)
	}
}
