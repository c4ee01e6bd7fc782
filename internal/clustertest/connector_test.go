package clustertest

import (
	"github.com/lbd-go/lbd"

	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

func TestConnectionsSpreadEvenly(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, c := openDB(t, cl, "", quiet()...)
	conns := holdConns(t, db, 30)

	if got := openCounts(c, cl); spread(got) != 0 || got[0] != 10 {
		t.Fatalf("Stats open = %v, want 10/10/10", got)
	}
	waitFor(t, 5*time.Second, "proxies to count 10/10/10", func() bool {
		got := proxyCounts(cl)
		return got[0] == 10 && got[1] == 10 && got[2] == 10
	})

	// 1000 random close/reopen cycles; with no idle pool a closed conn closes its socket.
	db.SetMaxIdleConns(0)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 1000 {
		k := r.IntN(len(conns))
		if err := conns[k].Close(); err != nil {
			t.Fatal(err)
		}
		conns[k] = holdConns(t, db, 1)[0]
		if got := openCounts(c, cl); spread(got) > 1 {
			t.Fatalf("cycle %d: spread of %v is more than 1", i, got)
		}
	}
	want := openCounts(c, cl)
	waitFor(t, 5*time.Second, "proxies to agree with Stats", func() bool {
		got := proxyCounts(cl)
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	})
	for _, cn := range conns {
		cn.Close()
	}
	if got := c.Stats().Open(); got != 0 {
		t.Fatalf("open after closing everything = %d, want 0", got)
	}
}

func TestStoppedProxyIsSkipped(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, c := openDB(t, cl, "", quiet()...)
	db.SetMaxIdleConns(0) // every Exec dials, so every Exec exercises the pick
	stopped := cl.Proxy(1)
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
	}
	ns, _ := c.Stats().Node(stopped.Addr())
	if ns.State != lbd.StateDown {
		t.Fatalf("stopped proxy state = %v, want down", ns.State)
	}
	// The first failed dial brings its probe forward, so the node may go down after one
	// failure; it must never take more than nodetable.DialFailuresToDown.
	if ns.DialFailures < 1 || ns.DialFailures > nodetable.DialFailuresToDown {
		t.Fatalf("dial failures = %d, want 1..%d (no dial after it went down)", ns.DialFailures, nodetable.DialFailuresToDown)
	}
	if ns.LastError == "" {
		t.Fatal("no last error recorded for the stopped proxy")
	}
}

func TestAllProxiesStoppedNamesEveryOne(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	db, _ := openDB(t, cl, "timeout=2s", quiet()...)
	for _, p := range cl.Proxies() {
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 { // first round dials all three; later rounds find them down
		err := db.Ping()
		var ce *lbd.ConnectError
		if !errors.As(err, &ce) {
			t.Fatalf("round %d: error %v (%T), want *ConnectError", round, err, err)
		}
		for _, a := range cl.Addrs() {
			if !strings.Contains(err.Error(), a) {
				t.Fatalf("round %d: error %q does not name %s", round, err, a)
			}
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("round %d: errors.Is(err, ECONNREFUSED) = false for %v", round, err)
		}
		if round == 2 && !ce.AllDown {
			t.Fatalf("after repeated failures every node should be down: %v", err)
		}
	}
}

func TestNoLbdParameterReachesTheProxy(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	params := "checkHealthIntervalSeconds=3600&checkBalanceIntervalSeconds=3600&recoverCheckCount=3" +
		"&logStats=false&exceptionSorter=mysql&unsupportedMethodBehavior=ignoreCall&checkHealthTimeoutMillis=100" +
		"&fatalErrorThreshold=4&fatalErrorWindowSeconds=20&balance=connection"
	db, _ := openDB(t, cl, params)
	conns := holdConns(t, db, 4)
	for _, cn := range conns {
		if _, err := cn.ExecContext(context.Background(), "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		cn.Close()
	}
	seen := 0
	for _, p := range cl.Proxies() {
		for _, q := range p.Queries() {
			seen++
			lq := strings.ToLower(q)
			for _, prm := range params_() {
				if strings.Contains(lq, strings.ToLower(prm)) {
					t.Fatalf("proxy %s received %q", p.Addr(), q)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("the proxies recorded no statement at all; the check above proved nothing")
	}
}

func params_() []string {
	var names []string
	for _, p := range params {
		names = append(names, p.name)
	}
	return names
}

func TestBadParameterIsAClearError(t *testing.T) {
	_, err := sql.Open(lbd.DriverName, "u:p@lb(127.0.0.1:1)/db?checkBalanceIntervalSeconds=ten")
	if err == nil || !strings.Contains(err.Error(), "checkBalanceIntervalSeconds") {
		t.Fatalf("sql.Open error = %v, want one naming checkBalanceIntervalSeconds", err)
	}
	_, err = lbd.NewConnector("u:p@lb(127.0.0.1:1)/db?exceptionSorter=nosuch")
	if err == nil || !strings.Contains(err.Error(), `exceptionSorter="nosuch"`) {
		t.Fatalf("error = %v, want one naming the unknown sorter", err)
	}
	if _, err := lbd.NewConnector("u:p@lb(127.0.0.1:1)/db", lbd.WithCheckHealthInterval(0)); err == nil {
		t.Fatal("a zero interval option was accepted")
	}
}

// A Config built in code skips the DSN's checks; the node table's rules need their settings in
// range (a zero fatal-error threshold used to panic at the first fatal error).
func TestConfigRuleSettingsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"recover", func(c *Config) { c.RecoverCheckCount = 0 }, "recoverCheckCount is 0"},
		{"threshold", func(c *Config) { c.FatalErrorThreshold = 0 }, "fatalErrorThreshold is 0"},
		{"window", func(c *Config) { c.FatalErrorWindow = -time.Second }, "fatalErrorWindow is -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseDSN("u:p@lb(127.0.0.1:1)/db")
			if err != nil {
				t.Fatal(err)
			}
			tc.set(cfg)
			c, err := NewConnectorFromConfig(cfg)
			if err == nil {
				c.Close()
				t.Fatalf("NewConnectorFromConfig accepted the setting; want an error naming %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestUnknownDatabaseFailsFastWithoutBlocking(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	dsn := strings.Replace(cl.DSN(""), ")/"+cl.Database(), ")/no_such_db_lbd", 1)
	c, err := lbd.NewConnector(dsn, append(quiet(), lbd.WithLogger(discardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	err = db.Ping()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1049 { // ER_BAD_DB_ERROR
		t.Fatalf("ping error = %v, want MySQL error 1049", err)
	}
	tried := 0
	for _, ns := range c.Stats().Nodes {
		if ns.State != lbd.StateUp {
			t.Fatalf("node %s is %v after an unknown-database error", ns.Addr, ns.State)
		}
		tried += int(ns.DialFailures)
	}
	if tried != 1 {
		t.Fatalf("%d dials failed, want exactly 1 (no other node tried)", tried)
	}
}

// TestWrappedConnKeepsOptionalInterfaces type-asserts, on a live connection, every interface
// database/sql and go-sql-driver look for.
func TestWrappedConnKeepsOptionalInterfaces(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	db, _ := openDB(t, cl, "", quiet()...)
	cn := holdConns(t, db, 1)[0]
	defer cn.Close()
	err := cn.Raw(func(dc any) error {
		checks := map[string]bool{}
		_, checks["ConnBeginTx"] = dc.(driver.ConnBeginTx)
		_, checks["ConnPrepareContext"] = dc.(driver.ConnPrepareContext)
		_, checks["ExecerContext"] = dc.(driver.ExecerContext)
		_, checks["QueryerContext"] = dc.(driver.QueryerContext)
		_, checks["Pinger"] = dc.(driver.Pinger)
		_, checks["SessionResetter"] = dc.(driver.SessionResetter)
		_, checks["Validator"] = dc.(driver.Validator)
		_, checks["NamedValueChecker"] = dc.(driver.NamedValueChecker)
		for name, ok := range checks {
			if !ok {
				t.Errorf("live connection lacks %s", name)
			}
		}
		w, ok := dc.(*conn)
		if !ok {
			t.Fatalf("live connection is %T, want *conn", dc)
		}
		// The socket under go-sql-driver must stay a syscall.Conn for its liveness check.
		t.Run("socket", func(t *testing.T) {
			nodeConns := w.node.snapshotConns()
			if len(nodeConns) != 1 {
				t.Fatalf("node tracks %d conns, want 1", len(nodeConns))
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tc := &trackedConn{}
	if _, ok := any(tc).(syscall.Conn); !ok {
		t.Fatal("trackedConn is not a syscall.Conn")
	}
}

func TestRetiredConnectionIsDroppedWithoutError(t *testing.T) {
	cl := lbdtest.NewCluster(t, 2)
	db, c := openDB(t, cl, "", quiet()...)
	db.SetMaxOpenConns(1)
	cn := holdConns(t, db, 1)[0]

	// Retire while in use, inside a transaction: the transaction must finish untouched.
	tx, err := cn.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var w *conn
	cn.Raw(func(dc any) error { w = dc.(*conn); return nil })
	if w.retire() {
		t.Fatal("retire closed an in-use connection")
	}
	if _, err := tx.Exec("SELECT 1"); err != nil {
		t.Fatalf("statement after retirement: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit after retirement: %v", err)
	}
	if got := c.Stats().Open(); got != 1 {
		t.Fatalf("open = %d while the retired connection is still checked out, want 1", got)
	}
	cn.Close() // back to the pool: IsValid says no, database/sql closes it
	if got := c.Stats().Open(); got != 0 {
		t.Fatalf("open = %d after the retired connection returned, want 0", got)
	}

	// Retire while idle: it closes at once, and the next checkout dials afresh without error.
	if _, err := db.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	var idle []*conn
	for _, tn := range c.table.Nodes(nil) {
		for _, x := range tn.Payload().snapshotConns() {
			if x.isIdle() {
				idle = append(idle, x)
			}
		}
	}
	if len(idle) != 1 || !idle[0].retireIfIdle() {
		t.Fatalf("want exactly one idle connection to retire, found %d", len(idle))
	}
	if got := c.Stats().Open(); got != 0 {
		t.Fatalf("open = %d after retiring the idle connection, want 0", got)
	}
	for i := range 5 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatalf("exec %d after idle retirement: %v", i, err)
		}
	}
	total := uint64(0)
	for _, ns := range c.Stats().Nodes {
		total += ns.Retired
	}
	if total != 2 {
		t.Fatalf("Retired = %d, want 2", total)
	}
}

func TestTLSChecksEachNodesOwnName(t *testing.T) {
	cfg, err := lbd.ParseDSN("u:p@lb(a.example:1,b.example:2,[fd00::3]:3)/db?tls=true")
	if err != nil {
		t.Fatal(err)
	}
	c, err := lbd.NewConnectorFromConfig(cfg, append(quiet(), lbd.WithLogger(discardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for addr, want := range map[string]string{"a.example:1": "a.example", "b.example:2": "b.example", "[fd00::3]:3": "fd00::3"} {
		my := c.nodeConfig(addr)
		if my.TLS == nil || my.TLS.ServerName != want {
			t.Errorf("node %s: TLS server name %q, want %q", addr, my.TLS.ServerName, want)
		}
	}
	if name := fixedTLSName(cfg); name != "" {
		t.Errorf("fixedTLSName = %q for a list, want none", name)
	}
	one, _ := lbd.ParseDSN("u:p@lb(a.example:1)/db?tls=true")
	if name := fixedTLSName(one); name != "" {
		t.Errorf("fixedTLSName = %q for a name derived from the only node, want none", name)
	}
	registerTestSources.Do(registerTLSTestSource)
	viaSource, err := lbd.ParseDSN("u:p@lbtlssrc(configserver.example:8080)/db?tls=true")
	if err != nil {
		t.Fatal(err)
	}
	if name := fixedTLSName(viaSource); name != "" {
		t.Errorf("fixedTLSName = %q, derived from the source's one address; want none", name)
	}
}

func TestConnectAfterClose(t *testing.T) {
	cl := lbdtest.NewCluster(t, 1)
	c, err := lbd.NewConnector(cl.DSN(""), lbd.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close() // idempotent
	if _, err := c.Connect(context.Background()); !errors.Is(err, lbd.ErrClosed) {
		t.Fatalf("Connect after Close = %v, want ErrClosed", err)
	}
}

func TestDriverOpenIsRefused(t *testing.T) {
	if _, err := (lbd.Driver{}).Open("u:p@lb(127.0.0.1:1)/db"); err == nil {
		t.Fatal("Driver.Open succeeded")
	}
}

func TestLbNetworkNeedsAConnector(t *testing.T) {
	db, err := sql.Open("mysql", "u:p@lb(127.0.0.1:1)/db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err == nil || !strings.Contains(err.Error(), "lbd Connector") {
		t.Fatalf("ping through plain go-sql-driver = %v, want the lb-network error", err)
	}
}

func TestConnectErrorMessageIsBounded(t *testing.T) {
	e := &lbd.ConnectError{}
	for i := range 50 {
		e.Nodes = append(e.Nodes, &lbd.NodeError{Addr: "10.0.0." + strconv.Itoa(i) + ":1", Err: syscall.ECONNREFUSED})
	}
	msg := e.Error()
	if !strings.Contains(msg, "and 30 more") || strings.Contains(msg, "10.0.0.20:1") {
		t.Fatalf("message not bounded: %s", msg)
	}
	if len(e.Unwrap()) != 50 || !errors.Is(e, syscall.ECONNREFUSED) {
		t.Fatal("Unwrap lost nodes")
	}
}

// registerTestSources makes test source registrations survive -count=N (nodes.Register panics
// on a second registration of a name).
var registerTestSources sync.Once

func registerTLSTestSource() {
	nodes.Register("lbtlssrc", nodes.SourceFactory{New: func(nodes.SourceConfig) (nodes.Source, error) {
		return nodes.StaticAddrs("proxy-a.example:2883"), nil
	}})
}
