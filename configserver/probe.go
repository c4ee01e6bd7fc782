package configserver

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"
)

// prober TCP-connects to every proxy of the served documents in the background, so /monitor
// answers from its results at once. lb-driver's clients do not use them: they probe proxies
// themselves.
type prober struct {
	log      *slog.Logger
	interval time.Duration
	timeout  time.Duration
	conc     int
	addrs    func() []string

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	kickc  chan struct{}

	mu      sync.Mutex
	results map[string]probeResult
}

// probeResult is the outcome of the last probe of one proxy.
type probeResult struct {
	reachable bool
	at        time.Time
	err       string
}

func startProber(log *slog.Logger, interval, timeout time.Duration, conc int, addrs func() []string) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	p := &prober{
		log: log, interval: interval, timeout: timeout, conc: conc, addrs: addrs,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), kickc: make(chan struct{}, 1),
		results: map[string]probeResult{},
	}
	go p.loop()
	return p
}

// kick asks for a probe of proxies never probed yet (after a document change); it never blocks.
func (p *prober) kick() {
	select {
	case p.kickc <- struct{}{}:
	default:
	}
}

// close stops the prober, cancelling probes in flight, and waits for it.
func (p *prober) close() {
	p.cancel()
	<-p.done
}

// result returns the last probe of addr; ok is false when it has not been probed.
func (p *prober) result(addr string) (r probeResult, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok = p.results[addr]
	return r, ok
}

func (p *prober) loop() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	p.round(true)
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.round(true)
		case <-p.kickc:
			p.round(false)
		}
	}
}

// round probes every proxy (all) or only those without a result, and forgets proxies no longer
// served.
func (p *prober) round(all bool) {
	addrs := p.addrs()
	want := make(map[string]bool, len(addrs))
	var targets []string
	p.mu.Lock()
	for _, a := range addrs {
		want[a] = true
		if _, ok := p.results[a]; all || !ok {
			targets = append(targets, a)
		}
	}
	for a := range p.results {
		if !want[a] {
			delete(p.results, a)
		}
	}
	p.mu.Unlock()

	sem := make(chan struct{}, p.conc)
	var wg sync.WaitGroup
	for _, a := range targets {
		select {
		case sem <- struct{}{}:
		case <-p.ctx.Done():
			wg.Wait()
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.probe(a)
		}()
	}
	wg.Wait()
}

func (p *prober) probe(addr string) {
	ctx, cancel := context.WithTimeout(p.ctx, p.timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if p.ctx.Err() != nil {
		if c != nil {
			c.Close()
		}
		return // closing: not a result
	}
	r := probeResult{reachable: err == nil, at: time.Now()}
	if err != nil {
		r.err = err.Error()
	} else {
		c.Close()
	}
	p.mu.Lock()
	prev, seen := p.results[addr]
	p.results[addr] = r // a proxy dropped meanwhile is forgotten by the next round
	p.mu.Unlock()
	switch {
	case !r.reachable && (!seen || prev.reachable):
		p.log.Warn("configserver: proxy unreachable (TCP connect failed); it is still served", "proxy", addr, "err", err)
	case r.reachable && seen && !prev.reachable:
		p.log.Info("configserver: proxy reachable again", "proxy", addr)
	}
}
