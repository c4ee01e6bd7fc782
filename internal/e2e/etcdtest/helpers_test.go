package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestMain fails the run when any goroutine outlives the tests: the embedded etcd servers, the
// proxies and every Connector stop cleanly, so no ignore list is needed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Shared helpers, under the names these tests use.
type logs = testkit.Logs

var waitFor = testkit.WaitFor

// testKey is the etcd key holding the schema's document.
const testKey = "/lbd/schemas/im_user"

// etcdServer is a one-member etcd running inside the test on loopback ports, with its data in
// a temporary directory so that it can be stopped and started again with its keys intact.
type etcdServer struct {
	t         testing.TB
	dir       string
	clientURL url.URL
	peerURL   url.URL
	e         *embed.Etcd
	cli       *clientv3.Client // the test's own client, for writing keys
}

// startEtcd starts a server that stops at the end of the test.
func startEtcd(t testing.TB) *etcdServer {
	t.Helper()
	s := &etcdServer{t: t, dir: t.TempDir()}
	s.clientURL = url.URL{Scheme: "http", Host: freeAddr(t)}
	s.peerURL = url.URL{Scheme: "http", Host: freeAddr(t)}
	t.Cleanup(s.close) // before the directory's removal: cleanups run last-in first-out
	s.start()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	s.cli = cli
	return s
}

// freeAddr returns a loopback address with a port nothing listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Endpoint is the server's client address, host:port.
func (s *etcdServer) Endpoint() string { return s.clientURL.Host }

// start starts the server on its ports and waits until it serves.
func (s *etcdServer) start() {
	s.t.Helper()
	e, err := launch(s.dir, s.clientURL, s.peerURL)
	if err != nil {
		s.t.Fatal(err)
	}
	s.e = e
}

// launch runs a quiet one-member etcd with its data in dir and waits until it serves.
func launch(dir string, client, peer url.URL) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "lbd-test"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.EnableGRPCGateway = false
	cfg.BcryptCost = 4 // bcrypt.MinCost: authentication tests need no slow hashing
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed: %w", err)
	case <-time.After(20 * time.Second):
		e.Close()
		return nil, errors.New("etcd did not become ready within 20s")
	}
}

// stop stops the server; start brings it back with the same data and ports.
func (s *etcdServer) stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

func (s *etcdServer) close() {
	if s.cli != nil {
		s.cli.Close()
		s.cli = nil
	}
	s.stop()
}

// put writes value under key.
func (s *etcdServer) put(key, value string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.cli.Put(ctx, key, value); err != nil {
		s.t.Fatalf("put %s: %v", key, err)
	}
}

// doc is the document lb-driver's config-server would store for schema with these proxies.
func doc(schema string, proxies ...string) string {
	list := ""
	for i, p := range proxies {
		if i > 0 {
			list += ","
		}
		list += fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf(`{"schema":%q,"proxy":[%s]}`, schema, list)
}
