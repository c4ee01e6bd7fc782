package lbd

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/lbd-go/lbd/internal/testkit"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/nodes"
)

// TestGroupsSurviveGoSQLDriver: '+' passes go-sql-driver's DSN parser inside lb(...) untouched,
// both ways, and lbd's Config keeps each node's groups.
func TestGroupsSurviveGoSQLDriver(t *testing.T) {
	const list = "10.0.0.1:2883#primary,10.0.0.2:2883*2#replica+analytics~az1,[fd00::1]:2883+reporting+analytics"
	dsn := "u:p@lb(" + list + ")/db?isolatedGroups=analytics%2Creporting"
	my, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if my.Addr != list {
		t.Fatalf("go-sql-driver read the address %q, want %q", my.Addr, list)
	}
	if back, err := mysql.ParseDSN(my.FormatDSN()); err != nil || back.Addr != list {
		t.Fatalf("go-sql-driver wrote back %q, which reads as %q (%v)", my.FormatDSN(), back.Addr, err)
	}
	c, err := ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "groups", fmt.Sprint(c.Groups), "map[10.0.0.2:2883:analytics [fd00::1]:2883:reporting+analytics]")
	eq(t, "isolated", strings.Join(c.IsolatedGroups, ","), "analytics,reporting")
	formatted := c.FormatDSN()
	if !strings.Contains(formatted, "lb("+list+")") || !strings.Contains(formatted, "isolatedGroups=analytics%2Creporting") {
		t.Fatalf("FormatDSN() = %q", formatted)
	}
	again, err := ParseDSN(formatted)
	if err != nil || fmt.Sprint(again.Groups) != fmt.Sprint(c.Groups) || strings.Join(again.IsolatedGroups, ",") != "analytics,reporting" {
		t.Fatalf("the formatted DSN reads back as %v, %v (%v)", again.Groups, again.IsolatedGroups, err)
	}
}

// A configuration in which a named group cannot exist is refused, naming the fix.
func TestGroupsRefusedAtConstruction(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		opts []Option
		want string
	}{
		{"u:p@lb(10.0.0.1:1,10.0.0.2:1)/db?group=analytics", nil, "group=analytics, but no proxy of the list is in group analytics: write one as host:port+analytics"},
		{"u:p@lb(10.0.0.1:1,10.0.0.2:1+bi)/db?isolatedGroups=analytics", nil, "isolatedGroups names analytics, but no proxy of the list is in it"},
		{"u:p@lb(10.0.0.1:1+bi,10.0.0.2:1+bi+x)/db?isolatedGroups=bi", nil, "every proxy of the list is in a group of isolatedGroups (bi)"},
		{"u:p@lb(10.0.0.1:1+bi,10.0.0.2:1)/db?group=bi&isolatedGroups=bi", nil, "with group=bi every pick chooses one: leave isolatedGroups out"},
		{"u:p@lb(10.0.0.1:1+bi)/db?group=BI", nil, `group="BI": group "BI" has an upper-case letter`},
		{"u:p@lb(10.0.0.1:1+bi)/db?isolatedGroups=bi,,x", nil, `isolatedGroups="bi,,x": group "" must be 1 to 32 characters`},
		{"u:p@lb(10.0.0.1:1+bi)/db?isolatedGroups=bi,bi", nil, `group "bi" is given twice`},
		{"u:p@lb(10.0.0.1:1+Bi)/db", nil, `group "Bi" has an upper-case letter; write group names in lower case ("bi")`},
		{"u:p@lb(10.0.0.1:1+bi#replica)/db", nil, "has its groups before its weight or role"},
		{"u:p@lb(10.0.0.1:1)/db", []Option{WithGroup("nosuch")}, "group=nosuch, but no proxy of the list is in group nosuch"},
		{"u:p@lb(10.0.0.1:1)/db", []Option{WithGroup("a b")}, `WithGroup: nodes: group "a b" has the character ' '`},
		{"u:p@lb(10.0.0.1:1)/db", []Option{WithIsolatedGroups("x", "x")}, `WithIsolatedGroups: group "x" is given twice`},
	} {
		c, err := NewConnector(tc.dsn, append([]Option{WithLogger(discardLogger())}, tc.opts...)...)
		if c != nil {
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewConnector(%q) = %v, want an error containing %q", tc.dsn, err, tc.want)
		}
	}
	// With a node source the groups come at run time: only the names are checked.
	c, err := NewConnector("u:p@lb()/db?group=analytics", WithSource(staticSource{}), WithLogger(discardLogger()))
	if err != nil {
		t.Fatalf("group with a node source: %v", err)
	}
	c.Close()
}

// staticSource gives one node of group analytics.
type staticSource struct{}

func (staticSource) Start(context.Context, func(nodes.Set)) (nodes.Set, error) {
	return nodes.Set{Nodes: []nodes.Node{{Addr: "10.0.0.9:1", Groups: "analytics"}}}, nil
}
func (staticSource) Close() error { return nil }

// counting answers every query as DefaultAnswer and counts the texts that start with "SELECT v".
type counting struct{ n atomic.Int64 }

func (c *counting) answer(q string) *mysqlfake.Result {
	if strings.HasPrefix(q, "SELECT v") {
		c.n.Add(1)
	}
	return mysqlfake.DefaultAnswer(q)
}

// groupFleet starts three fakes: two for everyday work and one of group analytics, and a
// Connector over them with params (balance, group settings).
func groupFleet(t *testing.T, params string, opts ...Option) (*sql.DB, *Connector, [3]*counting, []*mysqlfake.Server) {
	t.Helper()
	var cs [3]*counting
	srvs := make([]*mysqlfake.Server, 3)
	addrs := make([]string, 3)
	for i := range cs {
		cs[i] = &counting{}
		srvs[i] = mysqlfake.Start(t, mysqlfake.Config{Answer: cs[i].answer})
		addrs[i] = srvs[i].Addr()
	}
	addrs[2] += "+analytics"
	c, err := NewConnector("u:p@lb("+strings.Join(addrs, ",")+")/db?timeout=2s&"+params, append([]Option{WithLogger(discardLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db, c, cs, srvs
}

// query runs n statements with ctx, each to its end.
func query(t *testing.T, db *sql.DB, ctx context.Context, n int) {
	t.Helper()
	for i := range n {
		var v string
		if err := db.QueryRowContext(ctx, fmt.Sprintf("SELECT v /* %d */", i)).Scan(&v); err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("statement %d: %v", i, err)
		}
	}
}

// In statement mode a context chooses its group statement by statement; an isolated group's
// node takes nothing else.
func TestInGroupStatementMode(t *testing.T) {
	db, c, cs, srvs := groupFleet(t, "balance=statement&isolatedGroups=analytics", quiet()...)
	db.SetMaxOpenConns(4)
	query(t, db, context.Background(), 40)
	if cs[2].n.Load() != 0 || cs[0].n.Load() == 0 || cs[1].n.Load() == 0 {
		t.Fatalf("default statements %d/%d/%d: want none on the analytics node", cs[0].n.Load(), cs[1].n.Load(), cs[2].n.Load())
	}
	bi := InGroup(context.Background(), "analytics")
	query(t, db, bi, 20)
	if cs[2].n.Load() != 20 {
		t.Fatalf("analytics statements on the analytics node: %d of 20", cs[2].n.Load())
	}
	// One *sql.Conn, statements alternating between the default picks and the group.
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range 6 {
		ctx := context.Background()
		if i%2 == 1 {
			ctx = bi
		}
		before := cs[2].n.Load()
		var v string
		if err := conn.QueryRowContext(ctx, "SELECT v").Scan(&v); err != nil {
			t.Fatalf("statement %d: %v", i, err)
		}
		if on := cs[2].n.Load() - before; on != int64(i%2) {
			t.Fatalf("statement %d (group chosen: %v) ran on the analytics node %d times", i, i%2 == 1, on)
		}
	}
	// A transaction begun outside the group holds its connection: a statement choosing the
	// group inside it fails, nothing sent.
	tx, err := conn.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := cs[0].n.Load() + cs[1].n.Load() + cs[2].n.Load()
	if _, err := tx.ExecContext(bi, "SELECT v"); !errors.Is(err, ErrOutsideGroup) || !strings.Contains(err.Error(), `chooses group "analytics"`) {
		t.Fatalf("a statement choosing analytics in a transaction begun outside it: %v, want ErrOutsideGroup", err)
	}
	if after := cs[0].n.Load() + cs[1].n.Load() + cs[2].n.Load(); after != before {
		t.Fatal("the refused statement was sent")
	}
	tx.Rollback()
	if ns, _ := c.Stats().Node(srvs[2].Addr()); len(ns.Groups) != 1 || ns.Groups[0] != "analytics" {
		t.Fatalf("NodeStats.Groups = %v", ns.Groups)
	}
	if st := c.Stats(); len(st.IsolatedGroups) != 1 || st.IsolatedGroups[0] != "analytics" || st.Group != "" {
		t.Fatalf("Stats group settings: %q, %v", st.Group, st.IsolatedGroups)
	}
}

// In connection mode a Connector's group is all it picks from: a context may choose that group
// (or none), and choosing another fails at once, naming the fix.
func TestGroupConnectionMode(t *testing.T) {
	db, _, cs, _ := groupFleet(t, "group=analytics", quiet()...)
	query(t, db, context.Background(), 10)
	query(t, db, InGroup(context.Background(), "analytics"), 10)
	if cs[0].n.Load()+cs[1].n.Load() != 0 || cs[2].n.Load() != 20 {
		t.Fatalf("statements %d/%d/%d: want every one on the analytics node", cs[0].n.Load(), cs[1].n.Load(), cs[2].n.Load())
	}
	other, _, _, _ := groupFleet(t, "isolatedGroups=analytics", quiet()...)
	query(t, other, context.Background(), 3)
	var v string
	err := other.QueryRowContext(InGroup(context.Background(), "analytics"), "SELECT v").Scan(&v)
	if !errors.Is(err, ErrOutsideGroup) || !strings.Contains(err.Error(), "use balance=statement, or a Connector of its own with group=analytics") {
		t.Fatalf("InGroup in connection mode: %v, want ErrOutsideGroup naming the fix", err)
	}
}

// A statement choosing a group none of whose nodes is up waits up to failoverTimeoutMillis for
// one (and gets it when one comes back), then fails naming the group.
func TestInGroupWaitsThenFails(t *testing.T) {
	// It waits out failover timeouts: it runs beside the other tests that wait.
	t.Parallel()
	var probeDown atomic.Bool
	db, c, _, srvs := groupFleet(t, "balance=statement&isolatedGroups=analytics", fast(50*time.Millisecond, time.Second, time.Hour, &logRecorder{})...)
	srvs[2].AddFault(mysqlfake.Fault{Name: "probe/lost", Phase: mysqlfake.PhaseCommand, Bytes: mysqlfake.Raw(nil), After: mysqlfake.Reset,
		Match: func(cmd mysqlfake.Command) bool { return probeDown.Load() && strings.Contains(cmd.Text, probeQuery) }})
	probeDown.Store(true)
	waitFor(t, 5*time.Second, "the analytics node down", func() bool { s, _ := nodeState(c, srvs[2].Addr()); return s == StateDown })

	// A name that can be no group's fails at once.
	start := time.Now()
	err := db.QueryRowContext(InGroup(context.Background(), "Analytics"), "SELECT v").Scan(new(string))
	if err == nil || !strings.Contains(err.Error(), `InGroup: nodes: group "Analytics" has an upper-case letter`) || time.Since(start) > time.Second {
		t.Fatalf("a bad group name: %v after %v, want an error at once", err, time.Since(start))
	}

	// The group's node comes back while the statement waits: it runs there.
	done := make(chan error, 1)
	go func() {
		done <- db.QueryRowContext(InGroup(context.Background(), "analytics"), "SELECT v").Scan(new(string))
	}()
	waitFor(t, 5*time.Second, "a waiter", func() bool { return c.Stats().FailoverWaiting == 1 })
	probeDown.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("the waiting statement: %v, want it run once the node is back", err)
	}

	// Down for good: the wait ends at the default failover timeout, with an error naming the group.
	probeDown.Store(true)
	waitFor(t, 5*time.Second, "the analytics node down again", func() bool { s, _ := nodeState(c, srvs[2].Addr()); return s == StateDown })
	start = time.Now()
	err = db.QueryRowContext(InGroup(context.Background(), "analytics"), "SELECT v").Scan(new(string))
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.Group != "analytics" || ce.GroupNodes != 1 || !ce.NoTarget ||
		!strings.Contains(err.Error(), `no proxy of group "analytics" that is up serves target=any after waiting failoverTimeoutMillis (1 of the proxies are in the group)`) {
		t.Fatalf("a statement for a group that is down: %v, want a ConnectError naming the group", err)
	}
	if took := time.Since(start); took < DefaultFailoverTimeout-100*time.Millisecond {
		t.Fatalf("it failed after %v, want after the failover timeout (%v)", took, DefaultFailoverTimeout)
	}
	// Everyday statements are not held up by the analytics group.
	query(t, db, context.Background(), 5)
}

// SetNodes takes the list's spelling of groups: a node moved into an isolated group takes no
// more of the default picks, and in connection mode its pooled connections are retired.
func TestSetNodesMovesANodeIntoAnIsolatedGroup(t *testing.T) {
	srvs := startFakes(t, 3, mysqlfake.Config{})
	a, b, c3 := srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()
	con, err := NewConnector("u:p@lb("+a+","+b+"+analytics,"+c3+")/db?timeout=2s&isolatedGroups=analytics", append(quiet(), WithLogger(discardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(con)
	t.Cleanup(func() { db.Close() })
	db.SetMaxIdleConns(4)
	conns := testkit.HoldConns(t, db, 4)
	if open := openOf(con, a, b, c3); open != [3]int{2, 0, 2} {
		t.Fatalf("open connections %v, want 2/0/2: none on the isolated node", open)
	}
	for _, cn := range conns {
		cn.Close() // back in the pool, idle
	}
	if err := con.SetNodes([]string{a, b + "+analytics", c3 + "#replica+analytics+reporting"}); err != nil {
		t.Fatal(err)
	}
	ns, _ := con.Stats().Node(c3)
	if fmt.Sprint(ns.Groups) != "[analytics reporting]" || ns.RetiredBy[RetireRole] != 2 || ns.Open != 0 {
		t.Fatalf("%s after the list moved it: groups %v, retired %v, open %d; want its 2 idle connections retired", c3, ns.Groups, ns.RetiredBy, ns.Open)
	}
	for _, cn := range testkit.HoldConns(t, db, 4) {
		defer cn.Close()
	}
	if open := openOf(con, a, b, c3); open[1] != 0 || open[2] != 0 || open[0] != 4 {
		t.Fatalf("open connections %v, want every one on %s", open, a)
	}
}

// openOf returns the open connections of the nodes addrs.
func openOf(c *Connector, addrs ...string) (out [3]int) {
	st := c.Stats()
	for i, a := range addrs {
		ns, _ := st.Node(a)
		out[i] = ns.Open
	}
	return out
}

// In statement mode a caller that chooses a group does not depend on the default picks: with
// every node outside its group down, its statements run at once in the group (a new logical
// connection dials nothing among the default picks).
func TestInGroupDoesNotWaitForTheDefaultPicks(t *testing.T) {
	db, c, cs, srvs := groupFleet(t, "balance=statement&isolatedGroups=analytics", fast(50*time.Millisecond, time.Second, time.Hour, &logRecorder{})...)
	for _, s := range srvs[:2] {
		s.Close()
	}
	waitFor(t, 5*time.Second, "the default picks' nodes down", func() bool {
		a, _ := nodeState(c, srvs[0].Addr())
		b, _ := nodeState(c, srvs[1].Addr())
		return a == StateDown && b == StateDown
	})
	start := time.Now()
	query(t, db, InGroup(context.Background(), "analytics"), 5)
	if took := time.Since(start); took > time.Second || cs[2].n.Load() != 5 {
		t.Fatalf("5 statements in the group took %v and %d ran there; want them at once, on the analytics node", took, cs[2].n.Load())
	}
}
