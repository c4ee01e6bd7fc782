package lbd

import (
	"context"
	"database/sql"
	"errors"
	"github.com/lbd-go/lbd/internal/testkit"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

// credentialCalls counts a credentials function's calls per node, and returns what it is told.
type credentialCalls struct {
	mu       sync.Mutex
	calls    map[string]int
	user, pw string
	err      error
}

func (cc *credentialCalls) creds(ctx context.Context, node string) (string, string, error) {
	if _, ok := ctx.Deadline(); !ok {
		return "", "", errors.New("test: the dial's context has no deadline")
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.calls == nil {
		cc.calls = map[string]int{}
	}
	cc.calls[node]++
	return cc.user, cc.pw, cc.err
}

func (cc *credentialCalls) count(node string) int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.calls[node]
}

func (cc *credentialCalls) set(user, pw string, err error) {
	cc.mu.Lock()
	cc.user, cc.pw, cc.err = user, pw, err
	cc.mu.Unlock()
}

// secretsOf checks every way of printing what a test can see of c (its Stats, Config and
// itself) and the log lines for secrets.
func secretsOf(t *testing.T, c *Connector, logs *logRecorder, shown string, secrets []string) {
	t.Helper()
	nodestest.NoSecrets(t, "Stats", c.Stats(), shown, secrets)
	nodestest.NoSecrets(t, "Config", c.Config(), "", secrets)
	nodestest.NoSecrets(t, "*Connector", c, "", secrets)
	for _, l := range logs.Lines() {
		for _, s := range secrets {
			if strings.Contains(l, s) {
				t.Errorf("a log line shows a secret: %q", l)
			}
		}
	}
}

// Every dial, the application's and the probes', asks the function for its user and password,
// with the node it goes to; the servers accept only what the function returns (the DSN's
// password is wrong), and nothing lbd prints shows it.
func TestCredentialsPerDial(t *testing.T) {
	const secret = "per-dial-s3cret-XYZ"
	srvs := startFakes(t, 2, mysqlfake.Config{User: "rotated", Password: secret})
	cc := &credentialCalls{user: "rotated", pw: secret}
	logs := &logRecorder{}
	opts := append(fast(50*time.Millisecond, time.Second, time.Hour, logs), WithCredentials(cc.creds))
	db, c := openFakeDB(t, srvs, "", opts...)
	conns := testkit.HoldConns(t, db, 4)
	for _, s := range srvs {
		// The probe connection is dialed too; once it is, every connection a server accepted
		// was preceded by one call for its node, and no call went unused.
		waitFor(t, 5*time.Second, "the probe's dial and the application's on "+s.Addr(), func() bool {
			ns, _ := c.Stats().Node(s.Addr())
			return ns.Probes > 0 && s.Accepted() >= 3 && int64(cc.count(s.Addr())) == s.Accepted()
		})
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != StateUp || ns.DialFailures != 0 || ns.ProbeFailures != 0 {
			t.Errorf("node %s: %s, %d failed dials, %d failed probes; want up, none failed", ns.Addr, ns.State, ns.DialFailures, ns.ProbeFailures)
		}
	}
	for _, conn := range conns {
		conn.Close()
	}
	secretsOf(t, c, logs, srvs[0].Addr(), []string{secret})
}

// An error from the function fails the dial without reaching the node: the error names the node
// and wraps ErrNoCredentials and the function's error, Connect returns it at once, and the node
// is neither blamed nor probed into the ground.
func TestCredentialsError(t *testing.T) {
	const secret = "earlier-s3cret-XYZ"
	srvs := startFakes(t, 2, mysqlfake.Config{User: "app", Password: secret})
	sealed := errors.New("secrets store sealed")
	cc := &credentialCalls{err: sealed}
	logs := &logRecorder{}
	opts := append(fast(50*time.Millisecond, time.Second, time.Hour, logs), WithCredentials(cc.creds))
	db, c := openFakeDB(t, srvs, "", opts...)
	db.SetMaxIdleConns(0) // every Ping dials

	checkErr := func(err error) {
		t.Helper()
		if !errors.Is(err, ErrNoCredentials) || !errors.Is(err, sealed) {
			t.Fatalf("Ping = %v; want an error wrapping ErrNoCredentials and the function's error", err)
		}
		named := 0
		for _, s := range srvs {
			if strings.Contains(err.Error(), strconv.Quote(s.Addr())) {
				named++
			}
		}
		if named != 1 || !strings.Contains(err.Error(), "WithCredentials") {
			t.Errorf("error %q names %d nodes; want the one node tried, quoted, and the function (Connect returns at once)", err, named)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows the password", err)
		}
	}
	checkErr(db.PingContext(context.Background()))
	// Probes meet the same error: no verdict, no transition, nothing reaches the servers.
	waitFor(t, 5*time.Second, "probes of both nodes to meet the error", func() bool {
		return len(logs.Containing("probe not run", srvs[0].Addr(), "secrets store sealed")) > 0 &&
			len(logs.Containing("probe not run", srvs[1].Addr(), "secrets store sealed")) > 0
	})
	if n := srvs[0].Accepted() + srvs[1].Accepted(); n != 0 {
		t.Errorf("the servers accepted %d connections while the function failed", n)
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != StateUp || ns.Transitions != 0 || ns.LastError != "" {
			t.Errorf("node %s: %s, %d transitions, last error %q; a failed credentials function says nothing of the node",
				ns.Addr, ns.State, ns.Transitions, ns.LastError)
		}
	}

	// A function that panics fails its dial the same way, not as a proxy breaking the handshake.
	_, pc := openFakeDB(t, srvs, "", append(quiet(), WithCredentials(func(context.Context, string) (string, string, error) {
		panic("bug in the function")
	}))...)
	_, err := pc.Connect(context.Background())
	if !errors.Is(err, ErrNoCredentials) || errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "panicked: bug in the function") {
		t.Errorf("a function that panics: %v; want ErrNoCredentials saying it panicked", err)
	}
	if ns, _ := pc.Stats().Node(srvs[0].Addr()); ns.State != StateUp || ns.FatalErrors != 0 {
		t.Errorf("after the function panicked the node is %s with %d fatal errors; want up, none", ns.State, ns.FatalErrors)
	}

	cc.set("app", secret, nil)
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatalf("credentials back: %v", err)
	}
	cc.set("", "", sealed)
	checkErr(db.PingContext(context.Background()))
	cc.set("", "x", nil)
	if err := db.PingContext(context.Background()); !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "empty user") {
		t.Errorf("an empty user: %v; want an error naming it", err)
	}
	secretsOf(t, c, logs, srvs[0].Addr(), []string{secret})

	if _, err := NewConnector(fakeDSN(srvs, ""), WithCredentials(nil)); err == nil || !strings.Contains(err.Error(), "WithCredentials") {
		t.Errorf("WithCredentials(nil): %v; want an error naming it", err)
	}
}

// go-sql-driver's BeforeConnect runs for every dial and probe dial, on the node's own config,
// after WithCredentials; its error is handled like the function's, and it may not redirect the
// dial.
func TestBeforeConnectPerDial(t *testing.T) {
	const secret = "before-connect-s3cret-XYZ"
	srvs := startFakes(t, 2, mysqlfake.Config{User: "app", Password: secret})
	cfg, err := ParseDSN(fakeDSN(srvs, ""))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var fail error
	redirect := ""
	if err := cfg.MySQL.Apply(mysql.BeforeConnect(func(ctx context.Context, my *mysql.Config) error {
		mu.Lock()
		defer mu.Unlock()
		seen[my.Addr]++
		if my.User != "from-func" {
			return errors.New("test: WithCredentials did not run first")
		}
		my.User, my.Passwd = "app", secret
		if redirect != "" {
			my.Addr = redirect
		}
		return fail
	})); err != nil {
		t.Fatal(err)
	}
	logs := &logRecorder{}
	c, err := NewConnectorFromConfig(cfg, append(fast(50*time.Millisecond, time.Second, time.Hour, logs),
		WithCredentials(func(context.Context, string) (string, string, error) { return "from-func", "wrong", nil }))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	conns := testkit.HoldConns(t, db, 2)
	for _, s := range srvs {
		waitFor(t, 5*time.Second, "BeforeConnect for every connection of "+s.Addr(), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return s.Accepted() >= 2 && int64(seen[s.Addr()]) == s.Accepted()
		})
	}
	for _, conn := range conns {
		conn.Close()
	}
	db.SetMaxIdleConns(0)

	mu.Lock()
	fail = errors.New("token service down")
	mu.Unlock()
	err = db.PingContext(context.Background())
	if !errors.Is(err, ErrNoCredentials) || !strings.Contains(err.Error(), "token service down") || !strings.Contains(err.Error(), strconv.Quote(srvs[0].Addr())) {
		t.Errorf("a failing BeforeConnect: %v; want ErrNoCredentials naming the node and the cause", err)
	}
	mu.Lock()
	fail, redirect = nil, "127.0.0.1:1"
	mu.Unlock()
	if err := db.PingContext(context.Background()); err == nil || !strings.Contains(err.Error(), "must not change") {
		t.Errorf("a BeforeConnect that changes Addr: %v; want an error saying it must not", err)
	}
	secretsOf(t, c, logs, srvs[0].Addr(), []string{secret})
}
