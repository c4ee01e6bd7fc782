package configserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// Defaults of Config.
const (
	DefaultProbeInterval    = 10 * time.Second // time between TCP probes of every proxy
	DefaultProbeTimeout     = 1 * time.Second  // bound of one TCP probe
	DefaultProbeConcurrency = 16               // probes in flight at once
	DefaultDrainWindow      = 10 * time.Second // see Config.DrainWindow
)

// Config describes a Server for New.
type Config struct {
	// Backend supplies the documents. Required. The Server starts it in New and closes it in
	// Close.
	Backend Backend
	// Logger receives document changes, rejected documents, backend conditions and proxy
	// reachability changes. Nil means slog.Default().
	Logger *slog.Logger
	// AdminToken, when not empty, is required of every request to AdminHandler as
	// "Authorization: Bearer <token>" and lets /monitor show protected schemas. It must be at
	// least MinAdminTokenLength (16) bytes of printable characters without white space; New
	// fails otherwise. Empty (the default) leaves the admin handler open to whoever reaches its
	// address, which should then be loopback only.
	AdminToken string
	// AllowRemoteOnlineOffline lets any client of AdminHandler call /health/offline and
	// /health/online. By default (false) only loopback clients may; others get HTTP 403, with
	// or without the admin token. Behind a reverse proxy on the same host every client looks
	// like loopback.
	AllowRemoteOnlineOffline bool
	// HideUnknownSchemas answers a request for an unknown schema as if the schema required an
	// API key that the request does not carry (HTTP 403), instead of the Java server's
	// {"code":404}, so schema names cannot be enumerated. Both are failures for the Java and Go
	// clients; the 404 is the default because it is what operators of the Java server know.
	HideUnknownSchemas bool
	// ProbeInterval is the time between TCP probes of every proxy, whose results /monitor
	// reports. Zero means DefaultProbeInterval (10 s); a negative value turns probing off.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one probe. Zero means DefaultProbeTimeout (1 s).
	ProbeTimeout time.Duration
	// ProbeConcurrency is the number of probes in flight at once. Zero means
	// DefaultProbeConcurrency (16).
	ProbeConcurrency int
	// DrainWindow is how recently a request of Handler other than /health/* must have been
	// served for /health/offline to answer HTTP 500 ("still busy"). Zero means
	// DefaultDrainWindow (10 s).
	DrainWindow time.Duration
	// ReloadInterval is the shortest time from the end of one read of the store asked for by
	// /reload or Server.Reload to the start of the next, so /reload cannot hammer the store and
	// two reads start at least that far apart. Zero means
	// DefaultReloadInterval (1 s); a negative value means no spacing (concurrent calls still
	// share one read).
	ReloadInterval time.Duration
}

// Server is a config-server. It is safe for concurrent use. Create it with New and stop it with
// Close.
type Server struct {
	backend     Backend
	log         *slog.Logger
	allowRemote bool
	hideUnknown bool
	drainWindow time.Duration

	state    atomic.Pointer[state]
	pubMu    sync.Mutex // serializes publish
	handler  http.Handler
	admin    http.Handler
	adminSum []byte // SHA-256 of Config.AdminToken; nil without one
	reloads  *reloader

	online       atomic.Bool
	lastBusiness atomic.Int64 // UnixNano of the last request outside /health/, 0 for none

	prober *prober

	closeOnce sync.Once
	closeErr  error
}

// New starts a Server: it starts cfg.Backend, whose first read must succeed (a backend that
// cannot read its store, or finds an invalid document, makes New fail with the reason), and
// the background proxy probe. ctx bounds the first read only. The Server is online.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("configserver: Config.Backend is nil")
	}
	if cfg.ProbeTimeout < 0 || cfg.ProbeConcurrency < 0 || cfg.DrainWindow < 0 {
		return nil, errors.New("configserver: negative ProbeTimeout, ProbeConcurrency or DrainWindow")
	}
	if err := checkAdminToken(cfg.AdminToken); err != nil {
		return nil, err
	}
	s := &Server{
		backend:     cfg.Backend,
		log:         cfg.Logger,
		allowRemote: cfg.AllowRemoteOnlineOffline,
		hideUnknown: cfg.HideUnknownSchemas,
		drainWindow: orDefault(cfg.DrainWindow, DefaultDrainWindow),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.online.Store(true)
	s.state.Store(&state{schemas: map[string]*schemaState{}})
	if cfg.AdminToken != "" {
		sum := sha256.Sum256([]byte(cfg.AdminToken))
		s.adminSum = sum[:]
	}
	s.handler = s.publicRoutes()
	s.admin = s.adminRoutes()
	s.reloads = newReloader(cfg.Backend.Reload, orDefault(cfg.ReloadInterval, DefaultReloadInterval))

	// The prober exists before the first publish, which asks it to probe the new proxies.
	if interval := orDefault(cfg.ProbeInterval, DefaultProbeInterval); interval > 0 {
		conc := cfg.ProbeConcurrency
		if conc == 0 {
			conc = DefaultProbeConcurrency
		}
		s.prober = startProber(s.log, interval, orDefault(cfg.ProbeTimeout, DefaultProbeTimeout), conc, s.proxyAddrs)
	}
	if err := cfg.Backend.Start(ctx, s.publish); err != nil {
		if s.prober != nil {
			s.prober.close()
		}
		s.reloads.close()
		return nil, fmt.Errorf("configserver: starting the %s backend: %w", cfg.Backend.Kind(), err)
	}
	return s, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Handler returns the clients' HTTP handler: GET /fetch_sql_proxy_list (lb-driver's protocol)
// and the read-only GET /health/status and /health/check that load balancers poll. It serves
// no listing and no state change; those are AdminHandler's. The Server itself is the same
// handler.
func (s *Server) Handler() http.Handler { return s }

// ServeHTTP implements http.Handler; it is Handler's.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// Reload re-reads the backend, as POST /reload does, and returns the read's error. Calls are
// coalesced: one read runs at a time, two reads start at least Config.ReloadInterval apart, and
// each call waits for a read that started after it was made, sharing it with the calls that
// arrived meanwhile. ctx bounds the wait (the read goes on for the others); after Close it
// returns an error at once.
func (s *Server) Reload(ctx context.Context) error { return s.reloads.do(ctx) }

// Online reports whether /health/status answers 200 (true until /health/offline).
func (s *Server) Online() bool { return s.online.Load() }

// SetOnline sets what /health/status answers, as /health/online and /health/offline do (without
// their loopback check and drain answer).
func (s *Server) SetOnline(online bool) { s.online.Store(online) }

// Schemas returns the names of the schemas being served, in no particular order.
func (s *Server) Schemas() []string {
	st := s.state.Load()
	out := make([]string, 0, len(st.schemas))
	for name := range st.schemas {
		out = append(out, name)
	}
	return out
}

// Close stops the backend's watches and timers, the proxy probe and any reload, and waits for
// their goroutines. The handlers keep answering from the last documents (a reload then fails).
// Close is idempotent and returns the backend's Close error.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.reloads.close()
		if s.prober != nil {
			s.prober.close()
		}
		s.closeErr = s.backend.Close()
	})
	return s.closeErr
}

// publish replaces the served documents; it is the callback given to Backend.Start.
func (s *Server) publish(docs map[string]*nodes.Document) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	old := s.state.Load()
	next := &state{schemas: make(map[string]*schemaState, len(docs))}
	for name, d := range docs {
		if d == nil {
			continue
		}
		if prev := old.schemas[name]; prev != nil && (prev.doc == d || sameDocument(prev.doc, d)) {
			next.schemas[name] = prev // unchanged document, answers already computed
			continue
		}
		next.schemas[name] = newSchemaState(d)
	}
	s.state.Store(next)
	s.logChanges(old, next)
	if s.prober != nil {
		s.prober.kick()
	}
}

func (s *Server) logChanges(old, next *state) {
	for name, ns := range next.schemas {
		os := old.schemas[name]
		switch {
		case os == nil:
			s.log.Info("configserver: serving schema", "schema", name, "md5", ns.full.md5, "proxies", len(ns.full.list), "policy", policyOf(ns.doc))
		case os != ns:
			s.log.Info("configserver: schema changed", "schema", name, "md5", ns.full.md5, "oldMD5", os.full.md5, "proxies", len(ns.full.list), "policy", policyOf(ns.doc))
		}
	}
	for name := range old.schemas {
		if next.schemas[name] == nil {
			s.log.Info("configserver: schema no longer served", "schema", name)
		}
	}
}

func policyOf(d *nodes.Document) string {
	if d.ProxyPolicy == "" {
		return nodes.PolicyDefault
	}
	return d.ProxyPolicy
}

// proxyAddrs lists every proxy of every served document, for the prober.
func (s *Server) proxyAddrs() []string {
	st := s.state.Load()
	seen := map[string]bool{}
	var out []string
	add := func(list []string) {
		for _, a := range list {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	for _, ss := range st.schemas {
		add(ss.full.list)
		for _, a := range ss.byAZ {
			add(a.list)
		}
	}
	return out
}
