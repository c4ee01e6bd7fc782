package configserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/lbd-go/lbd/nodes"
)

// Defaults of EtcdConfig.
const (
	DefaultEtcdDialTimeout     = 5 * time.Second  // connecting, and each read
	DefaultEtcdRefreshInterval = 60 * time.Second // time between full reads of the prefix
)

// etcdWatchRetry is the pause before a failed watch is opened again.
const etcdWatchRetry = time.Second

// EtcdConfig describes an etcd backend for NewEtcd.
type EtcdConfig struct {
	// Endpoints are the etcd members: "host:port", "http://host:port" or "https://host:port".
	// At least one is required.
	Endpoints []string
	// Prefix is where the documents live: the document of schema s is the value of key
	// Prefix + "/" + s, as lb-driver's config-server lays them out. A trailing '/' is ignored.
	// Required.
	Prefix string
	// Username and Password authenticate to etcd; both or neither. Password is never logged.
	Username, Password string
	// TLS, when not nil, is used to connect to the endpoints. https:// endpoints with a nil TLS
	// use TLS with the system's roots.
	TLS *tls.Config
	// DialTimeout bounds connecting and each read of the prefix. Zero means
	// DefaultEtcdDialTimeout (5 s).
	DialTimeout time.Duration
	// RefreshInterval is the time between full reads of the prefix, which back the watch up
	// (a change the watch missed is served after at most this long). Zero means
	// DefaultEtcdRefreshInterval (60 s).
	RefreshInterval time.Duration
	// Logger receives document changes, rejected documents and etcd becoming unreachable or
	// reachable. Nil means slog.Default().
	Logger *slog.Logger
	// LogClient sends the etcd client library's own messages to Logger too. They are dropped
	// by default: the backend logs the conditions that matter once each.
	LogClient bool
}

// Etcd is a Backend serving every document under a prefix of an etcd cluster.
//
// At start it reads the whole prefix: etcd unreachable, a document that does not parse or
// validate, or one whose schema differs from its key fails the start, naming the key and the
// reason. Then it watches the prefix: a written key is validated again and served when valid;
// an invalid one is logged once (key and reason) and the schema's previous document, if any,
// stays served; a deleted key's schema is no longer served. A full read every RefreshInterval
// backs the watch up. While etcd cannot be reached the documents already read stay served;
// losing and regaining etcd are logged once each.
type Etcd struct {
	cfg    EtcdConfig
	prefix string // with its trailing '/'
	log    *slog.Logger

	mu       sync.Mutex // serializes reads, watch events and publishing
	client   *clientv3.Client
	publish  func(map[string]*nodes.Document)
	docs     map[string]*nodes.Document
	rejected map[string]int64 // key → mod revision of the rejected value, logged once
	readRev  int64            // etcd revision of the last full read
	down     bool             // the last full read failed (logged once)
	watchErr string           // the watch error last logged

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// NewEtcd returns an etcd backend. It checks the configuration only; it connects in Start.
func NewEtcd(cfg EtcdConfig) (*Etcd, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("configserver: EtcdConfig.Endpoints is empty")
	}
	for _, ep := range cfg.Endpoints {
		if strings.TrimSpace(ep) == "" {
			return nil, errors.New("configserver: EtcdConfig.Endpoints has an empty entry")
		}
	}
	prefix := strings.TrimRight(cfg.Prefix, "/")
	if prefix == "" {
		return nil, errors.New("configserver: EtcdConfig.Prefix is empty (or only '/')")
	}
	if (cfg.Username == "") != (cfg.Password == "") {
		return nil, errors.New("configserver: EtcdConfig needs both Username and Password, or neither")
	}
	if cfg.DialTimeout < 0 || cfg.RefreshInterval < 0 {
		return nil, errors.New("configserver: negative EtcdConfig.DialTimeout or RefreshInterval")
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultEtcdDialTimeout
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = DefaultEtcdRefreshInterval
	}
	e := &Etcd{cfg: cfg, prefix: prefix + "/", log: cfg.Logger}
	if e.log == nil {
		e.log = slog.Default()
	}
	return e, nil
}

// Kind implements Backend; it is "etcd".
func (e *Etcd) Kind() string { return "etcd" }

// Start implements Backend: it connects, reads the prefix (any problem is an error) and starts
// the watch and the periodic full read.
func (e *Etcd) Start(ctx context.Context, publish func(map[string]*nodes.Document)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.publish != nil || e.cancel != nil {
		return errors.New("configserver: etcd backend started twice")
	}
	client, err := clientv3.New(e.clientConfig())
	if err != nil {
		return fmt.Errorf("etcd: connecting to %v: %w", e.cfg.Endpoints, err)
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.DialTimeout)
	resp, err := client.Get(rctx, e.prefix, clientv3.WithPrefix())
	cancel()
	if err != nil {
		client.Close()
		return fmt.Errorf("etcd: reading %q at %v: %w", e.prefix, e.cfg.Endpoints, err)
	}
	docs := make(map[string]*nodes.Document, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		schema, doc, err := e.parse(kv.Key, kv.Value)
		if err != nil {
			client.Close()
			return fmt.Errorf("etcd key %q: %w", kv.Key, err)
		}
		docs[schema] = doc
	}
	e.client, e.publish, e.docs = client, publish, docs
	e.rejected = map[string]int64{}
	e.readRev = resp.Header.Revision
	publish(maps.Clone(docs))

	lctx, lcancel := context.WithCancel(context.Background())
	e.cancel, e.done = lcancel, make(chan struct{})
	go e.loop(lctx)
	return nil
}

func (e *Etcd) clientConfig() clientv3.Config {
	cfg := clientv3.Config{
		Endpoints:            e.cfg.Endpoints,
		DialTimeout:          e.cfg.DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: e.cfg.DialTimeout,
		Username:             e.cfg.Username,
		Password:             e.cfg.Password,
		TLS:                  e.cfg.TLS,
		Logger:               zap.NewNop(),
		// gRPC waits up to 2 minutes between reconnection attempts by default; a config-server
		// should follow etcd again within seconds of its return.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 250 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: e.cfg.DialTimeout,
		})},
	}
	if e.cfg.LogClient {
		cfg.Logger = newZapToSlog(e.log)
	}
	if cfg.TLS == nil {
		for _, ep := range e.cfg.Endpoints {
			if strings.HasPrefix(ep, "https://") {
				cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
				break
			}
		}
	}
	return cfg
}

// parse turns a key and its value into a validated document.
func (e *Etcd) parse(key, value []byte) (string, *nodes.Document, error) {
	schema := strings.TrimPrefix(string(key), e.prefix)
	if schema == "" {
		return "", nil, errors.New("the key names no schema")
	}
	doc, err := nodes.ParseDocument(value, schema)
	if err == nil {
		err = checkAPIKeys(doc)
	}
	if err != nil {
		return "", nil, err
	}
	return schema, doc, nil
}

// Reload implements Backend: a full read of the prefix. An error means etcd could not be read;
// invalid documents are not errors (they are logged and the previous ones kept).
func (e *Etcd) Reload(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.client == nil {
		return errors.New("configserver: etcd backend not started")
	}
	return e.refresh(ctx)
}

// Close implements Backend: it stops the watch and the timer and closes the client.
func (e *Etcd) Close() error {
	var err error
	e.once.Do(func() {
		e.mu.Lock()
		cancel, done := e.cancel, e.done
		e.mu.Unlock()
		if cancel == nil {
			return
		}
		cancel()
		<-done
		err = e.client.Close()
	})
	return err
}

func (e *Etcd) loop(ctx context.Context) {
	defer close(e.done)
	tick := time.NewTicker(e.cfg.RefreshInterval)
	defer tick.Stop()
	for {
		e.mu.Lock()
		from := e.readRev + 1
		e.mu.Unlock()
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		e.follow(ctx, e.client.Watch(wctx, e.prefix, clientv3.WithPrefix(), clientv3.WithRev(from)), tick.C)
		wcancel()
		if ctx.Err() != nil {
			return
		}
		// The watch ended (compaction, lost leader...): wait a little, read everything again
		// and watch from there.
		retry := time.NewTimer(etcdWatchRetry)
		select {
		case <-ctx.Done():
			retry.Stop()
			return
		case <-retry.C:
		}
		e.mu.Lock()
		_ = e.refresh(ctx) // logged inside
		e.mu.Unlock()
	}
}

// follow applies watch events and runs the periodic full read until the watch ends or ctx is
// done.
func (e *Etcd) follow(ctx context.Context, wch clientv3.WatchChan, tick <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			e.mu.Lock()
			_ = e.refresh(ctx) // logged inside
			e.mu.Unlock()
		case resp, ok := <-wch:
			if !ok {
				return
			}
			if err := resp.Err(); err != nil || resp.Canceled {
				if err == nil {
					err = errors.New("watch cancelled")
				}
				e.mu.Lock()
				if msg := err.Error(); msg != e.watchErr {
					e.watchErr = msg
					e.log.Warn("configserver: etcd watch ended, reading everything again", "prefix", e.prefix, "err", err)
				}
				e.mu.Unlock()
				return
			}
			e.mu.Lock()
			e.watchErr = ""
			e.apply(resp.Events)
			e.mu.Unlock()
		}
	}
}

// apply applies watch events newer than the last full read. Called with mu held.
func (e *Etcd) apply(events []*clientv3.Event) {
	next := e.docs
	changed := false
	for _, ev := range events {
		if ev.Kv.ModRevision <= e.readRev {
			continue // the last full read already has it
		}
		key := string(ev.Kv.Key)
		switch ev.Type {
		case mvccpb.DELETE:
			delete(e.rejected, key)
			schema := strings.TrimPrefix(key, e.prefix)
			if next[schema] != nil {
				if !changed {
					next, changed = maps.Clone(next), true
				}
				delete(next, schema)
				e.log.Info("configserver: etcd key deleted", "key", key, "schema", schema)
			}
		case mvccpb.PUT:
			schema, doc, err := e.parse(ev.Kv.Key, ev.Kv.Value)
			if err != nil {
				e.reject(key, ev.Kv.ModRevision, err, next)
				continue
			}
			delete(e.rejected, key)
			if !changed {
				next, changed = maps.Clone(next), true
			}
			next[schema] = doc
		}
	}
	if changed {
		e.docs = next
		e.publish(maps.Clone(next))
	}
}

// reject logs an invalid value of key once per revision. Called with mu held.
func (e *Etcd) reject(key string, rev int64, err error, served map[string]*nodes.Document) {
	if e.rejected[key] == rev {
		return
	}
	e.rejected[key] = rev
	keeping := "nothing (the schema is not served)"
	if served[strings.TrimPrefix(key, e.prefix)] != nil {
		keeping = "the previous document"
	}
	e.log.Error("configserver: etcd document rejected", "key", key, "revision", rev, "reason", err, "serving", keeping)
}

// refresh reads the whole prefix and publishes it: valid documents replace the served ones,
// invalid ones are logged and the previous document of their schema kept, and schemas whose key
// is gone are dropped. Called with mu held.
func (e *Etcd) refresh(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, e.cfg.DialTimeout)
	resp, err := e.client.Get(rctx, e.prefix, clientv3.WithPrefix())
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return err // closing
		}
		if !e.down {
			e.down = true
			e.log.Error("configserver: cannot read etcd, serving the documents already read", "endpoints", e.cfg.Endpoints, "prefix", e.prefix, "err", err)
		}
		return fmt.Errorf("etcd: reading %q: %w", e.prefix, err)
	}
	if e.down {
		e.down = false
		e.log.Info("configserver: etcd readable again", "endpoints", e.cfg.Endpoints, "prefix", e.prefix)
	}
	next := make(map[string]*nodes.Document, len(resp.Kvs))
	present := make(map[string]bool, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		key := string(kv.Key)
		present[key] = true
		schema, doc, err := e.parse(kv.Key, kv.Value)
		if err != nil {
			e.reject(key, kv.ModRevision, err, e.docs)
			if old := e.docs[strings.TrimPrefix(key, e.prefix)]; old != nil {
				next[strings.TrimPrefix(key, e.prefix)] = old
			}
			continue
		}
		delete(e.rejected, key)
		next[schema] = doc
	}
	for key := range e.rejected {
		if !present[key] {
			delete(e.rejected, key)
		}
	}
	e.readRev = resp.Header.Revision
	e.docs = next
	e.publish(maps.Clone(next))
	return nil
}
