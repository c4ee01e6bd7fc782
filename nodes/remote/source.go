package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lbd-go/lbd/nodes"
)

// Source is a nodes.Source that polls lb-driver-compatible config-servers for one schema's
// proxy list, with a disk cache and AZ affinity (see the package documentation). Build one
// with New, or through the DSN network "lbremote". It is safe for concurrent use.
type Source struct {
	s     settings
	cl    *client
	cache *diskCache // nil when the cache is off
	notes *notes

	mu      sync.Mutex
	health  nodes.Health
	started bool
	running bool // the refresh goroutine was started
	closed  bool

	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{} // closed when the refresh goroutine ends
	degraded atomic.Bool

	// Owned by Start, then by the refresh goroutine.
	update    func(nodes.Set)
	preferred int     // index of the config-server that answered last
	az, def   variant // what a plain request returns; the default set (policy=default)
	fb        fallback
	pushed    nodes.Set
}

var (
	_ nodes.Source      = (*Source)(nil)
	_ nodes.HealthAware = (*Source)(nil)
)

// variant is one of the two sets a config-server gives a client, each with its own md5.
type variant struct {
	name     string // "normal" (what a plain request gets: its AZ's list or the full one) or "default", for log lines
	policy   string // the policy query parameter
	cacheKey string // names the variant in the disk cache
	list     []string
	weights  map[string]int        // canonical address → weight, from the config-server's answer; nil when none
	roles    map[string]nodes.Role // canonical address → role, likewise
	zones    map[string]string     // canonical address → zone, likewise
	groups   map[string]string     // canonical address → groups (nodes.Node.Groups), likewise
	md5      string
	have     bool
}

// New checks cfg and builds a source; it does no I/O (Start fetches). Errors: no server, a
// malformed server address, an empty schema, a negative duration or count, an IP that is not
// one (Config.IP or LBD_IP). They never contain the API key.
func New(cfg Config) (*Source, error) {
	s, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	src := &Source{s: s, notes: newNotes(s.Logger, s.Schema), done: make(chan struct{})}
	src.cl = newClient(s, src.notes)
	if s.cacheDir != "" {
		src.cache = newDiskCache(s.cacheDir, s.Schema, s.servers)
	}
	src.ctx, src.cancel = context.WithCancel(context.Background())
	src.az = variant{name: "normal", cacheKey: "az=" + s.AZ + ";ip=" + s.IP}
	src.def = variant{name: "default", policy: policyDefault, cacheKey: "policy=" + policyDefault}
	return src, nil
}

// UseHealth implements nodes.HealthAware: the Connector shows the source its nodes' health,
// which the AZ fallback follows. Without it (a source used outside a Connector) the source
// never falls back. It must be called before Start.
func (s *Source) UseHealth(h nodes.Health) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.health = h
}

// Degraded reports whether the source has fallen back from its AZ set to the default set
// because every node of the AZ set was unreachable.
func (s *Source) Degraded() bool { return s.degraded.Load() }

// Start implements nodes.Source. It asks every config-server in turn for the list, until one
// gives a usable one, which is written to the disk cache and returned. When none does, it
// starts from the disk cache of an earlier run and logs a warning; it does not when a
// config-server refused the API key (ErrForbidden) or did not know the schema
// (ErrUnknownSchema), which are configuration mistakes. Without a usable answer or cache it
// returns an error naming each config-server's failure. Afterwards one goroutine polls the
// list and calls update with each new set, until Close. Start may be called once.
func (s *Source) Start(ctx context.Context, update func(nodes.Set)) (nodes.Set, error) {
	if update == nil {
		return nodes.Set{}, errors.New("remote: Start: nil update function")
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nodes.Set{}, errors.New("remote: Start after Close")
	case s.started:
		s.mu.Unlock()
		return nodes.Set{}, errors.New("remote: Start called twice")
	}
	s.started = true
	health := s.health
	s.mu.Unlock()

	s.update = update
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel) // Close during Start cancels the fetches too
	defer stop()

	ans, errs, srv, ok := s.round(fctx, &s.az)
	if ok {
		s.notes.roundAnswered("normal", srv, errs)
		s.take(&s.az, ans)
	} else if err := s.startFromCache(errs); err != nil {
		return nodes.Set{}, err
	}
	s.fb.track(s.az.list, s.s.Clock.Now())
	s.pushed = s.compose()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nodes.Set{}, errors.New("remote: closed during Start")
	}
	s.running = true
	go s.run(health)
	return s.pushed, nil
}

// startFromCache takes the az set from the disk cache after every config-server failed, or
// returns the error that Start returns.
func (s *Source) startFromCache(errs []*ServerError) error {
	fail := func(cacheNote string) error {
		format := "remote: no config-server gave a usable node list for schema %q (" +
			strings.TrimSuffix(strings.Repeat("%w; ", len(errs)), "; ") + ")" + cacheNote
		args := []any{s.s.Schema}
		for _, e := range errs {
			args = append(args, e)
		}
		return fmt.Errorf(format, args...)
	}
	for _, e := range errs {
		if errors.Is(e, ErrForbidden) || errors.Is(e, ErrUnknownSchema) {
			return fail("")
		}
	}
	switch {
	case s.cache == nil && s.s.cacheErr != nil:
		return fail(fmt.Sprintf(", and there is no disk cache (no cache directory: %v)", s.s.cacheErr))
	case s.cache == nil:
		return fail(", and the disk cache is off")
	}
	cf, path, err := s.cache.load(s.az.cacheKey)
	switch {
	case errors.Is(err, errNoCache):
		return fail(", and no earlier run cached a list in " + s.cache.dir)
	case errors.Is(err, errUnsafeCache):
		s.notes.emit(slog.LevelWarn, "lbd: refusing the config-server node list cache: others could have written it", "file", path, "error", err.Error())
		return fail(fmt.Sprintf(", and the disk cache is not trusted (%v)", err))
	case err != nil:
		s.notes.emit(slog.LevelWarn, "lbd: ignoring a corrupt config-server node list cache file", "file", path, "error", err.Error())
		return fail(fmt.Sprintf(", and the cached list is unusable (%s: %v)", path, err))
	}
	s.az.list, s.az.weights, s.az.roles, s.az.md5, s.az.have = slices.Clone(cf.Nodes), cf.Weights, cf.roles, cf.MD5, true
	s.az.zones, s.az.groups = cf.Zones, cf.Groups
	s.notes.startedFromCache(errs, path, cf.SavedAt, len(cf.Nodes))
	return nil
}

// Close implements nodes.Source: it stops the refresh goroutine, cancelling a request in
// flight, and waits for it. It is idempotent and returns nil.
func (s *Source) Close() error {
	s.mu.Lock()
	already, running := s.closed, s.running
	s.closed = true
	s.mu.Unlock()
	if already {
		return nil
	}
	s.cancel()
	if running {
		<-s.done
	}
	s.cl.close()
	return nil
}
