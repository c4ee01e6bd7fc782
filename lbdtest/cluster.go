package lbdtest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Cluster is a set of proxies in front of one shared backend database.
// Create it with Start or NewCluster and release it with Close. All
// methods are safe for concurrent use.
type Cluster struct {
	cfg     config
	backend *backend

	mu       sync.Mutex
	proxies  []*Proxy
	closed   bool
	closeErr error
	closing  sync.Mutex // held for the whole of Close
}

// Start starts a backend and n proxies in front of it. n must be at
// least 1. The backend is an in-memory go-mysql-server unless
// EnvBackendDSN is set (see the package documentation). On error nothing
// is left running.
func Start(n int, opts ...Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("lbdtest: need at least 1 proxy, got %d", n)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	b, err := newBackend(cfg)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, backend: b}
	for range n {
		if _, err := c.AddProxy(); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

// NewCluster is Start for tests and benchmarks: it calls t.Fatal if the
// cluster cannot be started and registers Close with t.Cleanup, reporting
// a failed Close with t.Error.
func NewCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c, err := Start(n, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// Proxies returns the cluster's proxies in creation order. The slice is a
// snapshot; proxies added later are not in it.
func (c *Cluster) Proxies() []*Proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Proxy(nil), c.proxies...)
}

// Proxy returns the i-th proxy in creation order. It panics if i is out of
// range, like a slice index.
func (c *Cluster) Proxy(i int) *Proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proxies[i]
}

// Addrs returns the "127.0.0.1:port" address of every proxy, in creation
// order, whether or not it is running.
func (c *Cluster) Addrs() []string {
	ps := c.Proxies()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Addr()
	}
	return out
}

// DSN returns a go-sql-driver style DSN for the whole cluster using the
// network name "lb": "user:password@lb(addr1,addr2,...)/database", with
// "?"+params appended when params is not empty. params must not start
// with "?". Open it with lbd (lbd.Open, lbd.NewConnector or sql.Open("lbd", dsn)), which dials the "lb" network.
func (c *Cluster) DSN(params string) string {
	var sb strings.Builder
	sb.WriteString(c.User())
	sb.WriteByte(':')
	sb.WriteString(c.Password())
	sb.WriteString("@lb(")
	sb.WriteString(strings.Join(c.Addrs(), ","))
	sb.WriteString(")/")
	sb.WriteString(c.Database())
	if params != "" {
		sb.WriteByte('?')
		sb.WriteString(params)
	}
	return sb.String()
}

// User returns the user name clients log in with ("root" for the
// in-memory backend).
func (c *Cluster) User() string { return c.backend.user }

// Password returns the password clients log in with (empty for the
// in-memory backend).
func (c *Cluster) Password() string { return c.backend.password }

// Database returns the name of the database the cluster serves.
func (c *Cluster) Database() string { return c.backend.database }

// BackendAddr returns the address the proxies relay to, for connecting to
// the backend directly without any proxy: "127.0.0.1:port" for the
// in-memory backend, or the address from EnvBackendDSN (a socket path if
// that DSN uses the unix network).
func (c *Cluster) BackendAddr() string { return c.backend.addr }

// AddProxy starts one more proxy on a fresh port and appends it to the
// cluster. It returns ErrClosed after Close.
func (c *Cluster) AddProxy() (*Proxy, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	p, err := newProxy(c.backend, c.cfg.logger)
	if err != nil {
		return nil, err
	}
	c.proxies = append(c.proxies, p)
	return p, nil
}

// Close stops every proxy, closing all client connections, then stops the
// in-memory backend, and waits for the goroutines of the cluster to
// finish. It waits at most 10 seconds in all for the in-memory backend's
// connections: those still busy after one second are cut, and if some
// are still running at the end, Close reports an error and returns.
// Tables of an external backend are left as they are. Close is
// idempotent: later calls return the first call's result. Afterwards
// AddProxy and Proxy.Start return ErrClosed.
func (c *Cluster) Close() error {
	c.closing.Lock()
	defer c.closing.Unlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.closeErr
	}
	c.closed = true
	ps := append([]*Proxy(nil), c.proxies...)
	c.mu.Unlock()

	var errs []error
	for _, p := range ps {
		if err := p.shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.backend.close(); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	c.mu.Lock()
	c.closeErr = err
	c.mu.Unlock()
	return err
}
