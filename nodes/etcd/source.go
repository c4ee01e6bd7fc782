package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lbd-go/lbd/nodes"
)

// Keepalive pings on the connection to etcd.
const (
	keepAliveTime    = 30 * time.Second
	keepAliveTimeout = 10 * time.Second
)

// ErrClosed is what Start returns after Close.
var ErrClosed = errors.New("etcd: source closed")

// Source is a nodes.Source that follows one etcd key. Build it with New; the zero value is not
// usable. It is safe for concurrent use.
type Source struct {
	cfg    Config
	ctx    context.Context // canceled by Close; every etcd call derives from it
	cancel context.CancelFunc

	mu      sync.Mutex
	started bool
	closed  bool
	cli     *clientv3.Client
	done    chan struct{} // closed when the follow goroutine has returned

	closeOnce sync.Once
	closeErr  error

	// Owned by the follow goroutine once Start has returned.
	update    func(nodes.Set)
	current   []string // sorted addresses of the set the Connector has
	seenRev   int64    // newest etcd revision reflected in current/problem
	reachable bool     // whether the latest read reached etcd
	problem   string   // the key's current bad condition, "" when its document is valid
}

// New checks cfg, fills in its defaults and returns a source that has not contacted etcd yet;
// Start does. Errors name the Config field at fault and never contain the password.
func New(cfg Config) (*Source, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Source{cfg: cfg, ctx: ctx, cancel: cancel, reachable: true}, nil
}

// Start implements nodes.Source: it connects, reads the key and returns its document's proxy
// list, then follows the key until Close. It fails when etcd cannot be reached within the
// dial timeout (or ctx ends first), when the key does not exist, when its document is invalid
// or names another schema, after Close, and when called twice.
func (s *Source) Start(ctx context.Context, update func(nodes.Set)) (nodes.Set, error) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nodes.Set{}, ErrClosed
	case s.started:
		s.mu.Unlock()
		return nodes.Set{}, errors.New("etcd: Start called twice")
	}
	s.started = true
	s.mu.Unlock()

	set, cli, rev, err := s.first(ctx)
	if err != nil {
		return nodes.Set{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cli.Close()
		return nodes.Set{}, ErrClosed
	}
	s.cli, s.update, s.done = cli, update, make(chan struct{})
	s.current, s.seenRev = sortedAddrs(set), rev
	go s.follow(cli, rev)
	return set, nil
}

// first connects and reads the key once, for Start.
func (s *Source) first(ctx context.Context) (nodes.Set, *clientv3.Client, int64, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   s.cfg.Endpoints,
		DialTimeout: s.cfg.DialTimeout,
		// Pings find a connection whose peer vanished silently, which would hold the watch
		// forever; etcd refuses pings more often than every 5 s.
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		TLS:                  s.cfg.TLS,
		Username:             s.cfg.Username,
		Password:             s.cfg.Password,
		Context:              s.ctx,
		Logger:               zap.NewNop(), // conditions are logged by the source, once each
	})
	if err != nil {
		return nodes.Set{}, nil, 0, fmt.Errorf("etcd: connecting to %v: %w", s.cfg.Endpoints, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	resp, err := cli.Get(ctx, s.cfg.Key)
	if err != nil {
		cli.Close()
		return nodes.Set{}, nil, 0, fmt.Errorf("etcd: reading key %q from %v: %w", s.cfg.Key, s.cfg.Endpoints, err)
	}
	if len(resp.Kvs) == 0 {
		cli.Close()
		return nodes.Set{}, nil, 0, fmt.Errorf("etcd: key %q does not exist (revision %d)", s.cfg.Key, resp.Header.Revision)
	}
	kv := resp.Kvs[0]
	set, err := s.parse(kv.Value, kv.ModRevision)
	if err != nil {
		cli.Close()
		return nodes.Set{}, nil, 0, fmt.Errorf("etcd: key %q at revision %d: %w", s.cfg.Key, kv.ModRevision, err)
	}
	return set, cli, resp.Header.Revision, nil
}

// Close implements nodes.Source: it stops following the key, waits for the source's goroutine
// and closes the etcd client. It is idempotent and may be called before Start.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.mu.Lock()
		s.closed = true
		cli, done := s.cli, s.done
		s.mu.Unlock()
		if done != nil {
			<-done
		}
		if cli != nil {
			if err := cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
				s.closeErr = fmt.Errorf("etcd: closing the client: %w", err)
			}
		}
	})
	return s.closeErr
}
