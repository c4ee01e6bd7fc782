package etcd

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lbd-go/lbd/nodes"
)

// minWatchRetry is the first pause before a canceled watch is set up again; the pause doubles
// while watches keep ending early, up to the refresh interval.
const minWatchRetry = 500 * time.Millisecond

// follow is the source's one goroutine: it applies watch events and periodic full reads until
// Close, so update is never called concurrently.
func (s *Source) follow(cli *clientv3.Client, rev int64) {
	clk := s.cfg.Clock
	refresh := clk.NewTimer(s.cfg.RefreshInterval)
	defer refresh.Stop()
	var (
		wch        clientv3.WatchChan // the current watch; nil while none is set up
		pending    <-chan clientv3.WatchChan
		retry      nodes.Timer
		retryC     <-chan time.Time
		backoff    = min(minWatchRetry, s.cfg.RefreshInterval)
		watchSince = clk.Now()
		helpers    sync.WaitGroup
	)
	pending, stopWatch := s.watch(cli, rev+1, &helpers)
	defer func() {
		stopWatch()
		if retry != nil {
			retry.Stop()
		}
		helpers.Wait()
	}()
	for {
		select {
		case <-s.life.Ctx.Done():
			return
		case <-refresh.C():
			s.reread(cli)
			refresh.Reset(s.cfg.RefreshInterval)
		case wch = <-pending:
			pending = nil
		case <-retryC:
			retryC = nil
			pending, stopWatch = s.watch(cli, s.seenRev+1, &helpers)
			watchSince = clk.Now()
		case wr, ok := <-wch:
			if ok && !wr.Canceled && wr.Err() == nil {
				s.reached()
				s.apply(wr.Events)
				continue
			}
			if s.life.Ctx.Err() != nil {
				return
			}
			stopWatch()
			wch = nil
			reason := "watch channel closed"
			if ok && wr.Err() != nil {
				reason = wr.Err().Error()
			}
			s.cfg.Logger.Debug("lbd: etcd watch ended; reading the key and watching again",
				"key", s.cfg.Key, "revision", s.seenRev, "reason", reason)
			s.reread(cli) // whatever the watch missed
			if clk.Now().Sub(watchSince) >= s.cfg.RefreshInterval {
				backoff = min(minWatchRetry, s.cfg.RefreshInterval) // that watch served well
			}
			if retry == nil {
				retry = clk.NewTimer(backoff)
			} else {
				retry.Reset(backoff)
			}
			retryC = retry.C()
			backoff = min(2*backoff, s.cfg.RefreshInterval)
		}
	}
}

// watch sets up a watch of the key from revision rev and delivers it on the returned channel.
// Setting one up waits until etcd answers, so it happens on a helper goroutine (counted in
// helpers) while follow goes on reading the key on its timer. The returned function cancels
// the watch, or its setting up.
func (s *Source) watch(cli *clientv3.Client, rev int64, helpers *sync.WaitGroup) (<-chan clientv3.WatchChan, context.CancelFunc) {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(s.life.Ctx))
	ready := make(chan clientv3.WatchChan, 1)
	helpers.Go(func() { ready <- cli.Watch(ctx, s.cfg.Key, clientv3.WithRev(rev)) })
	return ready, cancel
}

// apply handles one watch response: only the newest event counts, and none that a full read
// has already covered.
func (s *Source) apply(events []*clientv3.Event) {
	var last *clientv3.Event
	for _, ev := range events {
		if ev.Kv != nil && ev.Kv.ModRevision > s.seenRev {
			last = ev
		}
	}
	if last == nil {
		return
	}
	s.seenRev = last.Kv.ModRevision
	if last.Type == clientv3.EventTypeDelete {
		s.observe(nil, last.Kv.ModRevision)
		return
	}
	s.observe(last.Kv, last.Kv.ModRevision)
}

// reread reads the key in full, noting whether etcd answered.
func (s *Source) reread(cli *clientv3.Client) {
	ctx, cancel := context.WithTimeout(s.life.Ctx, s.cfg.DialTimeout)
	resp, err := cli.Get(ctx, s.cfg.Key)
	cancel()
	if s.life.Ctx.Err() != nil {
		return // closing
	}
	if err != nil {
		if s.reachable {
			s.reachable = false
			s.cfg.Logger.Warn("lbd: etcd unreachable; keeping the current node list",
				"key", s.cfg.Key, "revision", s.seenRev, "endpoints", s.cfg.Endpoints, "reason", err.Error())
		}
		return
	}
	s.reached()
	s.seenRev = resp.Header.Revision
	if len(resp.Kvs) == 0 {
		s.observe(nil, resp.Header.Revision)
		return
	}
	s.observe(resp.Kvs[0], resp.Kvs[0].ModRevision)
}

// reached notes an answer from etcd, logging the end of an outage.
func (s *Source) reached() {
	if !s.reachable {
		s.reachable = true
		s.cfg.Logger.Info("lbd: etcd reachable again", "key", s.cfg.Key, "endpoints", s.cfg.Endpoints)
	}
}

// observe handles the key's value at revision rev: kv is nil when the key is gone. A valid
// document with another proxy list goes to update; anything else keeps the list.
func (s *Source) observe(kv *mvccpb.KeyValue, rev int64) {
	if kv == nil {
		s.trouble("deleted", "lbd: etcd key deleted; keeping the current node list", rev, "the key does not exist")
		return
	}
	set, err := s.parse(kv.Value, rev)
	if err != nil {
		s.trouble("invalid@"+strconv.FormatInt(rev, 10),
			"lbd: etcd key holds an invalid document; keeping the current node list", rev, err.Error())
		return
	}
	if s.problem != "" {
		s.problem = ""
		s.cfg.Logger.Info("lbd: etcd key holds a valid document again", "key", s.cfg.Key, "revision", rev)
	}
	addrs := sortedEntries(set)
	if slices.Equal(addrs, s.current) {
		return
	}
	s.current = addrs
	s.update(set)
}

// trouble logs a bad condition of the key once, when it differs from the previous one.
func (s *Source) trouble(condition, msg string, rev int64, reason string) {
	if s.problem == condition {
		return
	}
	s.problem = condition
	s.cfg.Logger.Warn(msg, slog.String("key", s.cfg.Key), slog.Int64("revision", rev), slog.String("reason", reason))
}

// parse turns a document into a set versioned by the key's mod revision.
func (s *Source) parse(value []byte, rev int64) (nodes.Set, error) {
	doc, err := nodes.ParseDocument(value, s.cfg.Schema)
	if err != nil {
		return nodes.Set{}, err
	}
	set := nodes.Set{Nodes: doc.Nodes(doc.Proxy), Version: strconv.FormatInt(rev, 10)}
	if err := set.Validate(); err != nil {
		return nodes.Set{}, err
	}
	return set, nil
}

// sortedEntries is the set in a form that tells sets apart by addresses, weights and roles, not
// order.
func sortedEntries(set nodes.Set) []string {
	out := make([]string, len(set.Nodes))
	for i, n := range set.Nodes {
		out[i] = n.Entry()
	}
	slices.Sort(out)
	return out
}
