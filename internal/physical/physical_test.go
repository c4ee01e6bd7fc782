package physical

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/nodes"
)

func init() {
	// The root package registers Dial for the Connector; these tests have no Connector.
	mysql.RegisterDialContext("lb", Dial)
}

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// hooks records what the connections tell the Connector.
type hooks struct {
	mu     sync.Mutex
	errs   []error
	broken []error
	ended  []error // CallerEnded's causes
	// farewells are the errors Farewell was told.
	farewells []error
	trace     *Trace // what Trace hands the node; nil traces nothing
}

func (h *hooks) Trace() *Trace { return h.trace }

func (h *hooks) Farewell(_ *Conn, err error) {
	h.mu.Lock()
	h.farewells = append(h.farewells, err)
	h.mu.Unlock()
}

// RetryRead retries no read: the Connector's rules for it are tested in the root package.
func (h *hooks) RetryPrepare(*Conn, error) bool { return false }

func (h *hooks) RetryRead(context.Context, *Conn, string, []driver.NamedValue, error) (driver.Rows, bool, error) {
	return nil, false, nil
}

func (h *hooks) CallerEnded(_ *Conn, cause error) {
	h.mu.Lock()
	h.ended = append(h.ended, cause)
	h.mu.Unlock()
}

func (h *hooks) StatementError(_ *Conn, err error, _ bool) error {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
	return err
}

func (h *hooks) Broken(_ *Conn, err error) {
	h.mu.Lock()
	h.broken = append(h.broken, err)
	h.mu.Unlock()
}

// rig is one node over a fake server, in a table of its own.
type rig struct {
	table *Table
	node  *Node
	hooks *hooks
	srv   *mysqlfake.Server
}

func newRig(t *testing.T, addr string) *rig {
	t.Helper()
	return newRigWith(t, addr, nil)
}

// newRigWith is newRig with the node's go-sql-driver configuration changed by edit (TLS,
// compression: the node's Transport takes them as the Connector's does).
func newRigWith(t *testing.T, addr string, edit func(*mysql.Config)) *rig {
	t.Helper()
	table, err := nodetable.New(nodetable.Config[*Node]{RecoverCount: 1, FatalThreshold: 1, FatalWindow: time.Minute, ProbeInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{table: table, hooks: &hooks{}}
	build := func(tn *TableNode) (*Node, error) {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr, cfg.Timeout = "u", "lb", tn.Addr(), time.Second
		if edit != nil {
			edit(cfg)
		}
		tr, err := NewTransport(cfg)
		if err != nil {
			return nil, err
		}
		connector, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, err
		}
		return NewNode(table, tn, connector, tr, r.hooks), nil
	}
	if err := table.Start([]nodes.Node{{Addr: addr, Weight: 1}}, build); err != nil {
		t.Fatal(err)
	}
	r.node = table.Nodes(nil)[0].Payload()
	return r
}

func newFakeRig(t *testing.T) *rig {
	srv := mysqlfake.Start(t, mysqlfake.Config{})
	r := newRig(t, srv.Addr())
	r.srv = srv
	return r
}

// dial makes one counted connection to the rig's node, as the Connector's Connect does.
func (r *rig) dial(t *testing.T) *Conn {
	t.Helper()
	tn := r.table.Pick(nil)
	if tn == nil {
		t.Fatal("no node to pick")
	}
	dc, sock, err := Connect(context.Background(), tn.Payload(), true)
	if err != nil {
		if sock != nil {
			sock.Close()
		}
		t.Fatal(err)
	}
	c := tn.Payload().Adopt(dc.(FullConn), sock)
	t.Cleanup(func() { c.Close() })
	return c
}

func (r *rig) open() int { return r.table.Snapshot(nil)[0].Open }

// TestStateMachine walks a connection through every move: fresh, parked, claimed from the free
// list, given back, kept aside and claimed again, retired while in use, closed at its return.
func TestStateMachine(t *testing.T) {
	r := newFakeRig(t)
	ctx := context.Background()
	c := r.dial(t)
	if !c.Park() {
		t.Fatal("a fresh connection could not be parked")
	}
	if c.Park() || c.ClaimFresh() {
		t.Fatal("a parked connection moved as a fresh one")
	}
	r.node.PushFree(c, time.Now())
	if got := r.node.PopFree(); got != c {
		t.Fatalf("PopFree = %v, want the parked connection", got)
	}
	if r.node.PopFree() != nil {
		t.Fatal("the free list gave the same connection twice")
	}
	if _, err := c.ExecContext(ctx, "SELECT 1", nil); err != nil {
		t.Fatal(err)
	}
	if !c.IsValid() {
		t.Fatal("a healthy connection given back is not valid")
	}
	if idle, _ := r.node.ConnCounts(); idle != 1 {
		t.Fatalf("idle = %d after IsValid, want 1", idle)
	}
	if !c.Claim() || c.Claim() {
		t.Fatal("an idle connection must be claimed exactly once")
	}
	if !c.Usable(ctx) {
		t.Fatal("a claimed healthy connection is not usable")
	}
	if c.Retire(Rebalance) {
		t.Fatal("Retire closed a connection in use")
	}
	if _, err := c.ExecContext(ctx, "SELECT 1", nil); err != nil {
		t.Fatalf("a statement after retirement, still in use: %v", err)
	}
	if _, retiring := r.node.ConnCounts(); retiring != 1 {
		t.Fatalf("retiring = %d, want 1", retiring)
	}
	if c.IsValid() {
		t.Fatal("a retired connection given back is valid")
	}
	if got := r.node.RetiredBy(Rebalance); got != 1 {
		t.Fatalf("RetiredBy(Rebalance) = %d, want 1", got)
	}
	c.Close()
	if got := r.open(); got != 0 {
		t.Fatalf("open = %d after Close, want 0", got)
	}
	if len(r.node.Conns()) != 0 {
		t.Fatal("a closed connection is still registered")
	}
}

// TestRetiredIdleConnectionSendsNothing: an idle or fresh connection retired closes at once,
// and its next use answers driver.ErrBadConn before any byte reaches the proxy.
func TestRetiredIdleConnectionSendsNothing(t *testing.T) {
	r := newFakeRig(t)
	for _, parked := range []bool{false, true} {
		c := r.dial(t)
		if parked && !c.Park() {
			t.Fatal("park failed")
		}
		if !c.RetireIfIdle(Rebalance) {
			t.Fatalf("parked=%v: not closed at once", parked)
		}
		before := r.srv.Commands()
		if _, err := c.ExecContext(context.Background(), "SELECT 1", nil); !errors.Is(err, driver.ErrBadConn) {
			t.Fatalf("parked=%v: use after retirement = %v, want driver.ErrBadConn", parked, err)
		}
		if r.srv.Commands() != before {
			t.Fatalf("parked=%v: a command reached the proxy", parked)
		}
		if c.Claim() || c.ClaimFresh() {
			t.Fatalf("parked=%v: a closed connection was claimed", parked)
		}
	}
	if got := r.open(); got != 0 {
		t.Fatalf("open = %d, want 0", got)
	}
}

// wantRefusedCheckout checks that a statement on idle c, the rig's only connection retired so
// far, is refused at its checkout with driver.ErrBadConn, that nothing reaches the proxy, and
// that c is retired as of a down node.
func (r *rig) wantRefusedCheckout(t *testing.T, c *Conn, what string) {
	t.Helper()
	before := r.srv.Commands()
	if _, err := c.ExecContext(context.Background(), "SELECT 1", nil); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("checkout %s = %v, want driver.ErrBadConn", what, err)
	}
	if r.srv.Commands() != before {
		t.Fatalf("a command reached the proxy: checkout %s", what)
	}
	if got := r.node.RetiredBy(NodeDown); got != 1 {
		t.Fatalf("RetiredBy(NodeDown) = %d, want 1", got)
	}
}

// TestNodeDownRefusesCheckout: once the table shows the node down, an idle connection is not
// handed out (nothing is sent) and is retired under the node's reason; RetireBefore closes the
// idle ones and marks the rest.
func TestNodeDownRefusesCheckout(t *testing.T) {
	r := newFakeRig(t)
	ctx := context.Background()
	idle, busy := r.dial(t), r.dial(t)
	if !idle.Park() {
		t.Fatal("park failed")
	}
	if _, err := busy.ExecContext(ctx, "SELECT 1", nil); err != nil {
		t.Fatal(err)
	}
	r.table.Fatal(r.node.TN(), time.Now(), errors.New("test: fatal"))
	if r.table.IsUp(r.node.TN()) {
		t.Fatal("the node is still up")
	}
	r.wantRefusedCheckout(t, idle, "on a down node")
	if _, err := busy.ExecContext(ctx, "SELECT 1", nil); err != nil {
		t.Fatalf("a connection in use was cut: %v", err)
	}
	if closed := r.node.RetireAll(NodeDown); closed != 1 {
		t.Fatalf("RetireAll closed %d at once, want the idle one", closed)
	}
	if busy.IsValid() {
		t.Fatal("a down node's connection given back is valid")
	}
}

// TestStaleConnRefusedAfterRecovery: a connection opened before its node went down is not
// handed out once the node is up again, though the down transition was never handled (a late
// handler), and nothing reaches the proxy; one opened after the recovery is. The node table's
// model checker found the window: a connection of a node drained, listed again and probed good
// before the handler ran was handed out.
func TestStaleConnRefusedAfterRecovery(t *testing.T) {
	r := newFakeRig(t)
	ctx := context.Background()
	stale := r.dial(t)
	if !stale.Park() {
		t.Fatal("park failed")
	}
	tn := r.node.TN()
	now := time.Now()
	r.table.Probed(tn, now, errors.New("test: probe failed"), 0)
	r.table.Probed(tn, now.Add(time.Second), nil, 0) // RecoverCount 1: up again
	if !r.table.IsUp(tn) {
		t.Fatal("the node did not come back up")
	}
	r.wantRefusedCheckout(t, stale, "of a connection opened before the markdown")
	fresh := r.dial(t)
	if !fresh.Park() {
		t.Fatal("park failed")
	}
	if _, err := fresh.ExecContext(ctx, "SELECT 1", nil); err != nil {
		t.Fatalf("a connection opened after the recovery: %v", err)
	}
}

// TestRetireSurplusIdleFirst: the rebalancer's retirement takes idle connections first.
func TestRetireSurplusIdleFirst(t *testing.T) {
	r := newFakeRig(t)
	a, b, c := r.dial(t), r.dial(t), r.dial(t)
	a.Park()
	if _, err := b.ExecContext(context.Background(), "SELECT 1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(context.Background(), "SELECT 1", nil); err != nil {
		t.Fatal(err)
	}
	if got := r.node.RetireSurplus(2); got != 2 {
		t.Fatalf("RetireSurplus(2) = %d", got)
	}
	if a.Claim() {
		t.Fatal("the idle connection was not the first retired")
	}
	if !b.Retired() && !c.Retired() {
		t.Fatal("no in-use connection was marked")
	}
	if b.Retired() && c.Retired() {
		t.Fatal("both in-use connections were marked: more than asked")
	}
}

// TestPopOldestFreeSkipsClosed: the trim pops the longest parked connection, passing over any
// closed while parked, and none parked at or after the time it is given.
func TestPopOldestFreeSkipsClosed(t *testing.T) {
	r := newFakeRig(t)
	a, b, c := r.dial(t), r.dial(t), r.dial(t)
	t0 := time.Unix(1000, 0)
	for i, p := range []*Conn{a, b, c} {
		p.Park()
		r.node.PushFree(p, t0.Add(time.Duration(i)*time.Second))
	}
	a.RetireIfIdle(Rebalance)
	if got := r.node.PopOldestFree(t0.Add(time.Second)); got != nil {
		t.Fatalf("PopOldestFree(before b was parked) = %p, want none", got)
	}
	got := r.node.PopOldestFree(t0.Add(2 * time.Second))
	if got != b {
		t.Fatalf("PopOldestFree = %p, want the open one parked before the time %p", got, b)
	}
	got.ClosePhysical()
	if got := r.node.PopOldestFree(t0.Add(2 * time.Second)); got != nil {
		t.Fatalf("PopOldestFree = %p, want none: c was parked at the time given", got)
	}
	if got = r.node.PopOldestFree(time.Time{}); got != c {
		t.Fatalf("PopOldestFree(any) = %p, want %p", got, c)
	}
	got.ClosePhysical()
	if r.node.PopOldestFree(time.Time{}) != nil || r.node.FreeCount() != 0 {
		t.Fatal("the free list is not empty")
	}
	if n := r.open(); n != 0 {
		t.Fatalf("open = %d, want 0", n)
	}
}

// TestOneValue: exactly one row of one column, or an error.
func TestOneValue(t *testing.T) {
	srv := mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
		switch q {
		case "two rows":
			return &mysqlfake.Result{Columns: []string{"a"}, Rows: [][]string{{"1"}, {"2"}}}
		case "two cols":
			return &mysqlfake.Result{Columns: []string{"a", "b"}, Rows: [][]string{{"1", "2"}}}
		}
		return &mysqlfake.Result{Columns: []string{"a"}, Rows: [][]string{{"v"}}}
	}})
	r := newRig(t, srv.Addr())
	c := r.dial(t)
	ctx := context.Background()
	if v, err := OneValue(ctx, c, "one"); err != nil || v != "v" {
		t.Fatalf("OneValue = %q, %v", v, err)
	}
	for _, q := range []string{"two rows", "two cols"} {
		if _, err := OneValue(ctx, c, q); err == nil {
			t.Fatalf("%s: no error", q)
		}
	}
}

// TestOneRowAnswerIsReadWhole: after the first row of a one-row answer, its end has passed the
// guard too (go-sql-driver reads both at once), so Close finishes it from go-sql-driver's buffer
// without bounding the socket by the query's context: no deadline to set and lift, no context
// callback to register, per point select. A result with more to come is bounded (the hostile
// peer tests stall there).
func TestOneRowAnswerIsReadWhole(t *testing.T) {
	r := newFakeRig(t)
	c := r.dial(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := c.QueryContext(ctx, "SELECT 1", nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, len(rows.Columns()))
	if err := rows.Next(dest); err != nil {
		t.Fatal(err)
	}
	if !c.sock.AnswerRead() {
		t.Fatal("the guard has not seen the end of a one-row answer after its row")
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	// Closing after the first row costs what closing after the end does: Close registers no
	// context callback and sets no deadline (three allocations more when it does).
	query := func(toEnd bool) func() {
		return func() {
			rows, err := c.QueryContext(ctx, "SELECT 1", nil)
			if err != nil {
				t.Fatal(err)
			}
			rows.Next(dest)
			if toEnd {
				rows.Next(dest)
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	afterRow, afterEnd := testing.AllocsPerRun(100, query(false)), testing.AllocsPerRun(100, query(true))
	if afterRow > afterEnd {
		t.Fatalf("a query closed after its row allocates %v times, after its end %v: Close bounded the socket by the context", afterRow, afterEnd)
	}
}

// TestCallerEndIsNotAStatementError: a statement whose caller cancels it while the server is
// still thinking is cut by go-sql-driver; the hooks hear it once as CallerEnded, and neither
// that error nor the next one on the cut connection as a statement error.
func TestCallerEndIsNotAStatementError(t *testing.T) {
	srv := mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
		if strings.Contains(q, "slow") {
			time.Sleep(300 * time.Millisecond)
		}
		return mysqlfake.DefaultAnswer("SELECT 1")
	}})
	r := newRig(t, srv.Addr())
	c := r.dial(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := c.ExecContext(ctx, "SELECT 'slow'", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled statement returned %v, want context.Canceled", err)
	}
	if _, err := c.ExecContext(context.Background(), "SELECT 1", nil); err == nil {
		t.Fatal("a statement on the cut connection succeeded")
	}
	r.hooks.mu.Lock()
	defer r.hooks.mu.Unlock()
	if len(r.hooks.ended) != 1 || r.hooks.ended[0] != context.Canceled {
		t.Fatalf("CallerEnded heard %v, want context.Canceled once", r.hooks.ended)
	}
	if len(r.hooks.errs) != 0 {
		t.Fatalf("StatementError heard %v, want nothing: the caller cut the connection", r.hooks.errs)
	}
}

// TestNameValues: rows of name and value by lower-case name, at most max of them, or an error.
func TestNameValues(t *testing.T) {
	srv := mysqlfake.Start(t, mysqlfake.Config{Answer: func(q string) *mysqlfake.Result {
		switch q {
		case "status":
			return &mysqlfake.Result{Columns: []string{"Variable_name", "Value"},
				Rows: [][]string{{"WSREP_READY", "ON"}, {"wsrep_local_state", "4"}}}
		case "empty":
			return &mysqlfake.Result{Columns: []string{"Variable_name", "Value"}}
		case "many":
			rows := make([][]string, 100)
			for i := range rows {
				rows[i] = []string{fmt.Sprintf("v%d", i), "x"}
			}
			return &mysqlfake.Result{Columns: []string{"Variable_name", "Value"}, Rows: rows}
		case "one col":
			return &mysqlfake.Result{Columns: []string{"a"}, Rows: [][]string{{"1"}}}
		}
		return &mysqlfake.Result{Err: &mysqlfake.Error{Number: 1064, State: "42000", Message: "syntax"}}
	}})
	r := newRig(t, srv.Addr())
	c := r.dial(t)
	ctx := context.Background()
	v, err := NameValues(ctx, c, "status", 8)
	if err != nil || len(v) != 2 || v["wsrep_ready"] != "ON" || v["wsrep_local_state"] != "4" {
		t.Fatalf("NameValues = %v, %v", v, err)
	}
	if v, err := NameValues(ctx, c, "empty", 8); err != nil || len(v) != 0 {
		t.Fatalf("empty: NameValues = %v, %v", v, err)
	}
	for _, q := range []string{"many", "one col", "bad"} {
		if v, err := NameValues(ctx, c, q, 8); err == nil {
			t.Fatalf("%s: NameValues = %v, no error", q, v)
		}
	}
	// The connection still works after an answer cut short by max.
	if v, err := OneValue(ctx, c, "one col"); err != nil || v != "1" {
		t.Fatalf("after the refused answer: OneValue = %q, %v", v, err)
	}
}
