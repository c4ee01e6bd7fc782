package lbd

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Observer receives the measurements a Stats snapshot cannot give: the duration of every probe
// and every dial, one call each, for latency histograms (package lbdprom and lbdotel build
// theirs on it). Its shape follows net/http/httptrace.ClientTrace: a nil field is skipped, and
// new fields may be added.
//
// The functions are called synchronously from lbd's prober and from the goroutine that dials
// (database/sql's caller or its opener): they must be fast, must not block, and must be safe for
// concurrent use. Nothing is called per statement.
type Observer struct {
	// Probe is called after each probe of node addr ("host:port"), with how long it took, the
	// dial of a fresh probe connection included, and err nil for a good probe.
	Probe func(addr string, took time.Duration, err error)
	// Dial is called after each dial of an application connection to node addr (probe
	// connections are not application connections), with how long the dial and the MySQL
	// handshake took and err nil when the connection opened. Dials cut short because the caller
	// gave up or the Connector closed are reported too, with their error.
	Dial func(addr string, took time.Duration, err error)
}

// observers is a Connector's list of Observers, copied on write: the prober and the dial path
// load it with one atomic read and measure nothing when it is empty.
type observers struct {
	mu   sync.Mutex // serialises writers
	list atomic.Pointer[[]*Observer]
}

// load returns the current list; nil when no Observer is registered.
func (o *observers) load() []*Observer {
	if p := o.list.Load(); p != nil {
		return *p
	}
	return nil
}

func (o *observers) add(x *Observer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	next := append(slices.Clone(o.load()), x)
	o.list.Store(&next)
}

func (o *observers) remove(x *Observer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	next := slices.DeleteFunc(slices.Clone(o.load()), func(y *Observer) bool { return y == x })
	if len(next) == 0 {
		o.list.Store(nil)
		return
	}
	o.list.Store(&next)
}

// AddObserver registers o with the Connector until the returned remove function is called
// (calling it again does nothing). An Observer is registered on a running Connector, not through
// an Option, because what builds one (a metrics collector) is usually built over the Connector.
// With no Observer registered, probes and dials are not timed for it at all.
func (c *Connector) AddObserver(o Observer) (remove func()) {
	p := &o
	c.observers.add(p)
	var once sync.Once
	return func() { once.Do(func() { c.observers.remove(p) }) }
}

// probe tells every Observer of a probe (health.Config.ObserveProbe).
func (o *observers) probe(addr string, took time.Duration, err error) {
	for _, o := range o.load() {
		if o.Probe != nil {
			o.Probe(addr, took, err)
		}
	}
}

// dial returns the function that tells every Observer of a dial (connect.Config.ObserveDial),
// from the list loaded now; nil when no Observer is registered.
func (o *observers) dial() func(addr string, took time.Duration, err error) {
	obs := o.load()
	if obs == nil {
		return nil
	}
	return func(addr string, took time.Duration, err error) {
		for _, o := range obs {
			if o.Dial != nil {
				o.Dial(addr, took, err)
			}
		}
	}
}
