package logical

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// fakeConn is a go-sql-driver connection without a socket: it answers every statement at once
// and gives its node's open count back when it closes, as the socket beneath a real one does.
type fakeConn struct {
	table  *physical.Table
	tn     *physical.TableNode
	id     int
	closed atomic.Bool
	ran    []string
}

func (f *fakeConn) Prepare(q string) (driver.Stmt, error) { return nil, errors.New("fake: no prepare") }
func (f *fakeConn) PrepareContext(context.Context, string) (driver.Stmt, error) {
	return nil, errors.New("fake: no prepare")
}
func (f *fakeConn) Close() error {
	if f.closed.CompareAndSwap(false, true) {
		f.table.Release(f.tn)
	}
	return nil
}
func (f *fakeConn) Begin() (driver.Tx, error) { return fakeTx{}, nil }
func (f *fakeConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	f.ran = append(f.ran, "BEGIN")
	return fakeTx{}, nil
}
func (f *fakeConn) ExecContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Result, error) {
	f.ran = append(f.ran, q)
	return driver.RowsAffected(1), nil
}
func (f *fakeConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	f.ran = append(f.ran, q)
	return fakeRows{}, nil
}
func (f *fakeConn) Ping(context.Context) error                  { return nil }
func (f *fakeConn) ResetSession(context.Context) error          { return nil }
func (f *fakeConn) IsValid() bool                               { return !f.closed.Load() }
func (f *fakeConn) CheckNamedValue(nv *driver.NamedValue) error { return nil }

type fakeTx struct{}

func (fakeTx) Commit() error   { return nil }
func (fakeTx) Rollback() error { return nil }

type fakeRows struct{}

func (fakeRows) Columns() []string              { return nil }
func (fakeRows) Close() error                   { return nil }
func (fakeRows) Next(dest []driver.Value) error { return io.EOF }

// noHooks: the fake connections return no errors.
type noHooks struct{}

func (noHooks) StatementError(_ *physical.Conn, err error, _ bool) error { return err }
func (noHooks) Broken(*physical.Conn, error)                             {}
func (noHooks) CallerEnded(*physical.Conn, error)                        {}
func (noHooks) RetryPrepare(*physical.Conn, error) bool                  { return false }
func (noHooks) RetryRead(context.Context, *physical.Conn, string, []driver.NamedValue, error) (driver.Rows, bool, error) {
	return nil, false, nil
}
func (noHooks) Farewell(*physical.Conn, error) {}
func (noHooks) Trace() *physical.Trace         { return nil }

// rig is statement mode over a table of nodes whose dials make fake connections.
type rig struct {
	m     *Mode
	table *physical.Table
	conns []*fakeConn
	now   time.Time
}

func newRig(t *testing.T, nodeCount int) *rig { return newRigWith(t, nodeCount, nil) }

// newRigWith is newRig with the mode's settings changed by set.
func newRigWith(t *testing.T, nodeCount int, set func(*Config)) *rig {
	t.Helper()
	table, err := nodetable.New(nodetable.Config[*physical.Node]{RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Minute, ProbeInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var list []nodes.Node
	for i := range nodeCount {
		list = append(list, nodes.Node{Addr: "10.0.0." + string(rune('1'+i)) + ":3306", Weight: 1})
	}
	build := func(tn *physical.TableNode) (*physical.Node, error) {
		return physical.NewNode(table, tn, nil, physical.Transport{}, noHooks{}), nil
	}
	if err := table.Start(list, build); err != nil {
		t.Fatal(err)
	}
	r := &rig{table: table, now: time.Unix(1000, 0)}
	dial := func(ctx context.Context, n *physical.Node, panicDial bool) (*physical.Conn, error) {
		f := &fakeConn{table: table, tn: n.TN(), id: len(r.conns)}
		r.conns = append(r.conns, f)
		return n.Adopt(f, nil), nil
	}
	tryNodes := func(ctx context.Context, _ role.Target, _ string, next func([]*physical.TableNode) *physical.TableNode,
		_ func([]*physical.TableNode, time.Time) *physical.TableNode,
		use func(*physical.Node, bool) (*physical.Conn, error)) (*physical.Conn, error) {
		var tried []*physical.TableNode
		for tn := next(tried); tn != nil; tn = next(tried) {
			tried = append(tried, tn)
			if p, err := use(tn.Payload(), false); err == nil {
				return p, nil
			}
		}
		return nil, errors.New("fake: no node")
	}
	cfg := Config{
		Table: table,
		Connect: func(ctx context.Context) (*physical.Conn, error) {
			return tryNodes(ctx, role.Any, "", table.Pick, nil, func(n *physical.Node, p bool) (*physical.Conn, error) { return dial(ctx, n, p) })
		},
		TryNodes:    tryNodes,
		Dial:        dial,
		CountRouted: func(*physical.Node, bool) {},
		Closed:      func() bool { return false },
		ErrClosed:   errors.New("fake: closed"),
		Now:         func() time.Time { return r.now },
		Logger:      slog.New(slog.DiscardHandler),
	}
	if set != nil {
		set(&cfg)
	}
	r.m = New(cfg)
	return r
}

// fake returns the fake connection beneath p.
func fake(p *physical.Conn) *fakeConn { return p.Driver().(*fakeConn) }

// inUse is the table's count of physical connections claimed, over every node.
func (r *rig) inUse() int {
	total := 0
	for _, v := range r.table.Snapshot(nil) {
		total += v.InUse
	}
	return total
}

func (r *rig) open() int64 { return r.table.Total() }

func (r *rig) connect(t *testing.T) *logicalConn {
	t.Helper()
	dc, err := r.m.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return dc.(*logicalConn)
}

func exec(t *testing.T, l *logicalConn, q string) {
	t.Helper()
	if _, err := l.ExecContext(context.Background(), q, nil); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestUnpinnedStatementsParkTheirConnection: a plain statement binds a physical connection for
// the checkout only; when database/sql takes the logical connection back, it is parked on its
// node, unclaimed, and the next checkout may take it.
func TestUnpinnedStatementsParkTheirConnection(t *testing.T) {
	r := newRig(t, 1)
	l := r.connect(t)
	if r.open() != 1 {
		t.Fatalf("open = %d after Connect, want 1 (one physical per logical)", r.open())
	}
	exec(t, l, "SELECT 1")
	if r.inUse() != 1 || l.phys == nil || !l.claimed {
		t.Fatalf("in use = %d, bound %v: want the statement's connection claimed", r.inUse(), l.phys != nil)
	}
	if !l.IsValid() {
		t.Fatal("IsValid = false for a clean logical connection")
	}
	if l.phys != nil || r.inUse() != 0 {
		t.Fatalf("after IsValid: still bound %v, in use %d", l.phys != nil, r.inUse())
	}
	parked := 0
	for _, tn := range r.table.Nodes(nil) {
		parked += tn.Payload().FreeCount()
	}
	if parked != 1 {
		t.Fatalf("%d physical connections parked, want 1", parked)
	}
	if err := l.ResetSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	exec(t, l, "SELECT 2")
	if len(r.conns) != 1 {
		t.Fatalf("%d dials for two statements of one logical connection, want 1", len(r.conns))
	}
	l.Close()
}

// TestSessionStatePinsUntilReset: SET of a user variable keeps the physical connection while
// database/sql holds the logical one, across its statements and a return to the pool; when
// database/sql hands the logical connection out again (ResetSession), the pin ends: a physical
// connection that cannot be reset (these fakes have no lbd socket, as a server without
// COM_RESET_CONNECTION) is closed, and the next user's statement runs on another.
func TestSessionStatePinsUntilReset(t *testing.T) {
	r := newRig(t, 2)
	l := r.connect(t)
	exec(t, l, "SET @x = 1")
	p := l.phys
	if !l.pinned() {
		t.Fatal("SET did not pin")
	}
	if pinned, ok := Pinned(l); !pinned || !ok {
		t.Fatalf("Pinned = %v, %v", pinned, ok)
	}
	exec(t, l, "SELECT @x")
	if l.phys != p {
		t.Fatal("a pinned statement ran on another physical connection")
	}
	if !l.IsValid() || l.phys != p {
		t.Fatal("a pinned logical connection let its physical connection go at its return")
	}
	if r.inUse() != 0 {
		t.Fatalf("in use = %d while database/sql holds the pinned connection idle, want 0", r.inUse())
	}
	if err := l.ResetSession(context.Background()); err != nil || l.phys != nil || l.pinned() {
		t.Fatalf("ResetSession = %v, bound %v, pinned %v: the pin outlived its user", err, l.phys != nil, l.pinned())
	}
	if !fake(p).closed.Load() {
		t.Fatal("a physical connection that cannot be reset was not closed")
	}
	exec(t, l, "SELECT 1")
	if l.phys == p {
		t.Fatal("the next user ran on the closed physical connection")
	}
	l.IsValid()
	l.Close()
	if r.open() != 0 {
		t.Fatalf("open = %d after the last logical connection closed, want 0", r.open())
	}
}

// TestTransactionPinsUntilItEnds: BeginTx keeps the physical connection until Commit; a failed
// end retires it.
func TestTransactionPinsUntilItEnds(t *testing.T) {
	r := newRig(t, 3)
	l := r.connect(t)
	tx, err := l.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := l.phys
	exec(t, l, "UPDATE t SET a = 1")
	if !l.IsValid() || l.phys != p {
		t.Fatal("the transaction's physical connection was given back before its end")
	}
	if err := l.ResetSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	exec(t, l, "UPDATE t SET a = 2")
	if l.phys != p {
		t.Fatal("a statement of the transaction ran on another physical connection")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if l.pinned() {
		t.Fatal("still pinned after Commit")
	}
	want := []string{"BEGIN", "UPDATE t SET a = 1", "UPDATE t SET a = 2"}
	if got := fake(p).ran; len(got) != len(want) || got[0] != want[0] || got[2] != want[2] {
		t.Fatalf("ran %q on the pinned connection, want %q", got, want)
	}
	l.IsValid()
	l.Close()
}

// TestResultKeptAsideForItsReader: after an INSERT the physical connection is kept aside,
// unclaimed; LAST_INSERT_ID() runs on it, any other statement lets it go.
func TestResultKeptAsideForItsReader(t *testing.T) {
	r := newRig(t, 2)
	l := r.connect(t)
	exec(t, l, "INSERT INTO t VALUES (1)")
	p := l.phys
	if !l.IsValid() || l.phys != p || r.inUse() != 0 {
		t.Fatalf("after IsValid: bound %v, in use %d; want kept aside and unclaimed", l.phys == p, r.inUse())
	}
	if _, err := l.QueryContext(context.Background(), "SELECT LAST_INSERT_ID()", nil); err != nil {
		t.Fatal(err)
	}
	if l.phys != p {
		t.Fatal("LAST_INSERT_ID() ran on another physical connection than its INSERT")
	}
	l.IsValid()
	exec(t, l, "INSERT INTO t VALUES (2)")
	l.IsValid()
	exec(t, l, "SELECT 1")
	l.IsValid()
	if l.phys != nil {
		t.Fatal("a statement reading no result kept the connection aside")
	}
	l.Close()
}

// TestRetiredPinIsDropped: when lbd retires the physical connection a session pin holds, the
// logical connection answers false at its return and database/sql drops it.
func TestRetiredPinIsDropped(t *testing.T) {
	r := newRig(t, 1)
	l := r.connect(t)
	exec(t, l, "SET @x = 1")
	p := l.phys
	p.MarkRetired(physical.Rebalance)
	if l.IsValid() {
		t.Fatal("a logical connection whose session was retired stays valid")
	}
	if !fake(p).closed.Load() {
		t.Fatal("the retired physical connection was not closed")
	}
	l.Close()
	if r.open() != 0 {
		t.Fatalf("open = %d, want 0", r.open())
	}
}

// TestShiftingDemandKeepsItsConnections: with the split, writes need connections on the primary
// and reads spread over all three nodes, so each kind of round needs more connections on some
// node than the spares give. At statement returns the surplus stays while it was parked less
// than spareGrace ago, so alternating rounds do not dial again (closing it at once closed one
// node's connections and dialed them again at the next round of the other kind); once parked
// longer, it closes down to the goal.
func TestShiftingDemandKeepsItsConnections(t *testing.T) {
	r := newRigWith(t, 3, func(c *Config) { c.Split, c.Target = true, role.PreferPrimary })
	tns := r.table.Nodes(nil)
	r.table.RoleChecked(tns[0], nodes.RolePrimary, nil)
	for _, tn := range tns[1:] {
		r.table.RoleChecked(tn, nodes.RoleReplica, nil)
	}
	const logical = 6 // their connections are dialed at Connect, two on each node
	var ls []*logicalConn
	for range logical {
		ls = append(ls, r.connect(t))
	}
	round := func(q string) {
		for _, l := range ls {
			exec(t, l, q) // all six at once
		}
		for _, l := range ls {
			l.IsValid() // database/sql takes them back
		}
	}
	writes := func() { round("INSERT INTO t VALUES (1)") } // all on the primary
	reads := func() { round("SELECT 1") }                  // two on each node
	writes()
	reads()
	dialed := len(r.conns)
	for range 5 {
		writes()
		reads()
	}
	if len(r.conns) != dialed {
		t.Fatalf("%d dials in five more pairs of rounds, want none: the surplus was closed at a return and dialed again", len(r.conns)-dialed)
	}
	goal := int64(logical + 2) // one per logical connection, one spare per up node but one
	if r.open() <= goal {
		t.Fatalf("open = %d, not above the goal %d: the rounds made no surplus, the test proves nothing", r.open(), goal)
	}
	// A logical connection keeps its last physical one aside (for a result) until its next
	// statement, so the reads' connections are parked during the next round: the round after
	// that, a grace later, finds them parked long enough.
	for range 2 {
		r.now = r.now.Add(spareGrace + time.Millisecond)
		writes()
	}
	if r.open() > goal {
		t.Fatalf("open = %d after the surplus sat idle longer than spareGrace, want at most %d", r.open(), goal)
	}
	for _, v := range r.table.Snapshot(nil) {
		if v.Node == tns[0] && v.Open < logical {
			t.Fatalf("the primary keeps %d connections, want its %d: the trim took them before the replicas' idle ones", v.Open, logical)
		}
	}
}

// TestTrimKeepsOneSparePerUpNode: parked connections above one per logical connection plus one
// spare per up node but one are closed.
func TestTrimKeepsOneSparePerUpNode(t *testing.T) {
	r := newRig(t, 3)
	var ls []*logicalConn
	for range 4 {
		ls = append(ls, r.connect(t))
	}
	for _, l := range ls {
		exec(t, l, "SELECT 1") // every one claims at once: more physical connections
	}
	for _, l := range ls {
		l.IsValid()
	}
	for _, l := range ls[:3] {
		l.Close()
	}
	if got, want := r.open(), int64(1+2); got != want {
		t.Fatalf("open = %d with one logical connection over 3 up nodes, want %d", got, want)
	}
	ls[3].Close()
	if r.open() != 0 {
		t.Fatalf("open = %d with no logical connection, want 0", r.open())
	}
}
