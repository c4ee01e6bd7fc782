package routing

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes/nodestest"
)

// provider is a credentials function for tests: it counts its calls per node and returns the
// user and password set last; with perNode set, the user it returns for a node is perNode's
// name for it.
type provider struct {
	mu       sync.Mutex
	calls    map[string]int
	user, pw string
	err      error
	perNode  func(node string) string
}

func (p *provider) creds(_ context.Context, node string) (string, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[node]++
	if p.perNode != nil && p.err == nil {
		return p.perNode(node), p.pw, nil
	}
	return p.user, p.pw, p.err
}

func (p *provider) set(user, pw string, err error) {
	p.mu.Lock()
	p.user, p.pw, p.err = user, pw, err
	p.mu.Unlock()
}

func (p *provider) count(node string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[node]
}

// Through lbdtest's proxies: every connection a proxy relayed a login for, the application's
// and the probes', logged in with what the function returned for that proxy, and each login
// had a call of its own; an error from the function fails the dial naming the node, reaches no
// proxy and takes no node down.
//
// The proxies read the user of every login. On the in-memory engine, which takes any user and
// password, the function gives each node a user of its own, so a login with the DSN's user, or
// with another node's, shows; a real server (LBD_TEST_MYSQL_DSN) has one account for all, and
// refuses the DSN's. Calls are not matched to accepted connections one for one: a call whose
// dial ran out of time before it connected (a probe's, on a busy machine) reaches no proxy.
func TestCredentialsPerDialOnCluster(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	p := &provider{calls: map[string]int{}, user: cl.User(), pw: cl.Password()}
	userOf := func(string) string { return cl.User() }
	if !clusterkit.OnMariaDB() {
		userOf = func(node string) string { return "lbd_fn_" + node[strings.LastIndexByte(node, ':')+1:] }
		p.perNode = userOf
	}
	logins := func(px *lbdtest.Proxy) (own, other int64, all map[string]int64) {
		all = px.Logins()
		for u, n := range all {
			if u == userOf(px.Addr()) {
				own += n
			} else {
				other += n
			}
		}
		return own, other, all
	}
	// checkLogins fails t unless every login each proxy relayed was its node's function user,
	// each with a call of its own.
	checkLogins := func() {
		t.Helper()
		for _, px := range cl.Proxies() {
			own, other, all := logins(px)
			if other != 0 {
				t.Errorf("%s relayed logins %v; want only %q, the function's user for it", px.Addr(), all, userOf(px.Addr()))
			}
			if calls := p.count(px.Addr()); int64(calls) < own {
				t.Errorf("%s relayed %d logins for %d calls of the function; want a call per dial", px.Addr(), own, calls)
			}
		}
	}
	logs := &testkit.Logs{}
	// The DSN's user and password are wrong: only the function's may log in.
	dsn := strings.Replace(cl.DSN("timeout=2s"), cl.User()+":"+cl.Password()+"@", "nobody:wrong@", 1)
	c, err := lbd.NewConnector(dsn, append(clusterkit.Fast(50*time.Millisecond, time.Second, time.Hour, logs), lbd.WithCredentials(p.creds))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	conns := testkit.HoldConns(t, db, 6)
	for _, px := range cl.Proxies() {
		testkit.WaitForState(t, 5*time.Second, "the probe's and the application's logins on "+px.Addr(), func() (bool, string) {
			ns, _ := c.Stats().Node(px.Addr())
			own, other, all := logins(px)
			return ns.Probes > 0 && ns.Dials > 0 && own >= 2 || other > 0,
				fmt.Sprintf("%d probes, %d dials, logins %v, %d calls", ns.Probes, ns.Dials, all, p.count(px.Addr()))
		})
	}
	checkLogins()
	for _, conn := range conns {
		conn.Close()
	}

	db.SetMaxIdleConns(0) // the next Ping dials
	sealed := errors.New("vault sealed")
	transitions := map[string]uint64{}
	for _, ns := range c.Stats().Nodes {
		transitions[ns.Addr] = ns.Transitions
	}
	p.set("", "", sealed)
	before := cl.Proxies()[0].TotalConns() + cl.Proxies()[1].TotalConns() + cl.Proxies()[2].TotalConns()
	err = db.PingContext(context.Background())
	if !errors.Is(err, lbd.ErrNoCredentials) || !errors.Is(err, sealed) {
		t.Fatalf("Ping with the function failing: %v; want ErrNoCredentials wrapping its error", err)
	}
	named := 0
	for _, a := range cl.Addrs() {
		if strings.Contains(err.Error(), strconv.Quote(a)) {
			named++
		}
	}
	if named != 1 {
		t.Errorf("error %q names %d nodes, want the one tried", err, named)
	}
	if after := cl.Proxies()[0].TotalConns() + cl.Proxies()[1].TotalConns() + cl.Proxies()[2].TotalConns(); after != before {
		t.Errorf("the proxies accepted %d connections while the function failed", after-before)
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != lbd.StateUp || ns.Transitions != transitions[ns.Addr] {
			t.Errorf("node %s: %s after %d transitions (%d before the function failed); want up, untouched", ns.Addr, ns.State, ns.Transitions, transitions[ns.Addr])
		}
	}
	p.set(cl.User(), cl.Password(), nil)
	if err := db.PingContext(context.Background()); err != nil {
		t.Errorf("credentials back: %v", err)
	}
	checkLogins()
}

// The password of a dedicated user is rotated on a real MariaDB under load, while connections
// are dialed all the time (each lives 150 ms): first the server accepts the old and the new
// password (MariaDB's IDENTIFIED VIA ... OR ...), then the function returns the new one, then,
// once no dial can still carry the old one, ALTER USER ... IDENTIFIED BY sets the new one
// alone. No statement fails; a connection opened with the old password keeps working after
// the server stopped accepting it; nothing lbd prints shows either password.
func TestCredentialsRotationOnMariaDB(t *testing.T) {
	if !clusterkit.OnMariaDB() {
		t.Skip("needs a real server's accounts: set " + lbdtest.EnvBackendDSN)
	}
	admin, err := sql.Open("mysql", os.Getenv(lbdtest.EnvBackendDSN))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	user := fmt.Sprintf("lbd_rotate_%d", os.Getpid())
	account := "'" + user + "'@'%'"
	const oldPW, newPW = "old-s3cret-rotation-XYZ", "new-s3cret-rotation-XYZ"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mustExec := func(q string) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	admin.ExecContext(ctx, "DROP USER IF EXISTS "+account)
	mustExec("CREATE USER " + account + " IDENTIFIED BY '" + oldPW + "'")
	t.Cleanup(func() { admin.Exec("DROP USER IF EXISTS " + account) })

	cl := lbdtest.NewCluster(t, 2)
	mustExec("GRANT SELECT ON `" + cl.Database() + "`.* TO " + account)
	p := &provider{calls: map[string]int{}, user: user, pw: oldPW}
	logs := &testkit.Logs{}
	const dialTimeout = 2 * time.Second
	dsn := strings.Replace(cl.DSN("timeout="+dialTimeout.String()), cl.User()+":"+cl.Password()+"@", "", 1)
	c, err := lbd.NewConnector(dsn, append(clusterkit.Fast(100*time.Millisecond, time.Second, time.Hour, logs), lbd.WithCredentials(p.creds))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	db.SetConnMaxLifetime(150 * time.Millisecond) // new dials all the time

	held, err := db.Conn(ctx) // logged in with the old password
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	var who string
	if err := held.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&who); err != nil || !strings.HasPrefix(who, user+"@") {
		t.Fatalf("the held connection: %q, %v; want %s", who, err, user)
	}

	var stmts, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
				var v int
				err := db.QueryRowContext(sctx, "SELECT 1").Scan(&v)
				scancel()
				stmts.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	dials := func() (n uint64) {
		for _, ns := range c.Stats().Nodes {
			n += ns.Dials
		}
		return n
	}
	// Waits for the load to make n more dials (each connection lives 150 ms).
	moreDials := func(what string, n uint64) {
		t.Helper()
		from := dials()
		testkit.WaitFor(t, 20*time.Second, what, func() bool { return dials() >= from+n })
	}
	moreDials("dials with the old password", 10)

	mustExec("ALTER USER " + account + " IDENTIFIED VIA mysql_native_password USING PASSWORD('" + newPW +
		"') OR mysql_native_password USING PASSWORD('" + oldPW + "')")
	moreDials("dials while both passwords are accepted", 5)
	p.set(user, newPW, nil)
	switched := time.Now()
	moreDials("dials with the new password", 10)
	// A dial that took the old password just before the switch ends within its timeout.
	testkit.WaitFor(t, 2*dialTimeout, "every dial begun before the switch to end", func() bool { return time.Since(switched) > dialTimeout })
	mustExec("ALTER USER " + account + " IDENTIFIED BY '" + newPW + "'")
	atAlter := dials()
	moreDials("dials after the old password is gone", 20)
	close(stop)
	wg.Wait()

	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d statements failed during the rotation; the first: %v", n, stmts.Load(), *firstErr.Load())
	}
	if dials() < atAlter+20 {
		t.Errorf("only %d dials after the last ALTER USER", dials()-atAlter)
	}
	// The server refuses the old password now, but the connection opened with it still works.
	oldCfg := mysql.NewConfig()
	oldCfg.User, oldCfg.Passwd, oldCfg.Net, oldCfg.Addr, oldCfg.DBName = user, oldPW, "tcp", cl.Addrs()[0], cl.Database()
	oldConn, err := mysql.NewConnector(oldCfg)
	if err != nil {
		t.Fatal(err)
	}
	oldDB := sql.OpenDB(oldConn)
	defer oldDB.Close()
	if err := oldDB.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "1045") {
		t.Errorf("a dial with the old password after the rotation: %v; want 1045 access denied", err)
	}
	if err := held.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&who); err != nil {
		t.Errorf("the connection opened with the old password stopped working: %v", err)
	}
	for _, ns := range c.Stats().Nodes {
		if ns.State != lbd.StateUp || ns.DialFailures != 0 {
			t.Errorf("node %s: %s, %d failed dials; want up, none", ns.Addr, ns.State, ns.DialFailures)
		}
	}
	secrets := []string{oldPW, newPW}
	nodestest.NoSecrets(t, "Stats", c.Stats(), cl.Addrs()[0], secrets)
	nodestest.NoSecrets(t, "Config", c.Config(), "", secrets)
	nodestest.NoSecrets(t, "*Connector", c, "", secrets)
	for _, l := range logs.Lines() {
		for _, s := range secrets {
			if strings.Contains(l, s) {
				t.Errorf("a log line shows a password: %q", l)
			}
		}
	}
	t.Logf("%d statements, %d dials, none failed", stmts.Load(), dials())
}
