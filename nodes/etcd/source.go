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
	"github.com/lbd-go/lbd/nodes/lifecycle"
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
	cfg  Config
	life *lifecycle.Loop  // Start once, Close any time; every etcd call derives from its Ctx
	cli  *clientv3.Client // set when Start succeeds; closed by Close

	closeOnce sync.Once
	closeErr  error

	// Owned by the follow goroutine once Start has returned.
	update    func(nodes.Set)
	current   []string // sorted entries (address, weight, role) of the set the Connector has
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
	return &Source{cfg: cfg, life: lifecycle.New(), reachable: true}, nil
}

// Start implements nodes.Source: it connects, reads the key and returns its document's proxy
// list, then follows the key until Close. It fails when etcd cannot be reached within the
// dial timeout (or ctx ends first), when the key does not exist, when its document is invalid
// or names another schema, after Close, and when called twice.
func (s *Source) Start(ctx context.Context, update func(nodes.Set)) (nodes.Set, error) {
	if err := s.life.Begin("etcd", ErrClosed); err != nil {
		return nodes.Set{}, err
	}
	set, cli, rev, err := s.first(ctx)
	if err != nil {
		return nodes.Set{}, err
	}
	setup := func() {
		s.cli, s.update = cli, update
		s.current, s.seenRev = sortedEntries(set), rev
	}
	if !s.life.Go(setup, func() { s.follow(cli, rev) }) {
		cli.Close()
		return nodes.Set{}, ErrClosed
	}
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
		Context:              s.life.Ctx,
		Logger:               zap.NewNop(), // conditions are logged by the source, once each
	})
	if err != nil {
		return nodes.Set{}, nil, 0, fmt.Errorf("etcd: connecting to %v: %w", s.cfg.Endpoints, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	stop := context.AfterFunc(s.life.Ctx, cancel)
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
		s.life.Close()
		if s.cli != nil {
			if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
				s.closeErr = fmt.Errorf("etcd: closing the client: %w", err)
			}
		}
	})
	return s.closeErr
}
