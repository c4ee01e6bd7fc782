package lbd

import (
	"context"
	"errors"
	"github.com/lbd-go/lbd/internal/testkit"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// gatedLog is a slog handler that holds every "lbd: node state changed" record until open is
// called: a slow log handler, as an application's may be.
type gatedLog struct {
	gate chan struct{}
	once sync.Once
	held chan struct{} // closed when the first record is held
	hold sync.Once
}

func newGatedLog() *gatedLog {
	return &gatedLog{gate: make(chan struct{}), held: make(chan struct{})}
}

func (g *gatedLog) open() { g.once.Do(func() { close(g.gate) }) }

// waitHeld waits until the handler holds a transition's record.
func (g *gatedLog) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-g.held:
	case <-time.After(5 * time.Second):
		t.Fatal("no transition reached the log handler within 5s")
	}
}

func (g *gatedLog) Enabled(context.Context, slog.Level) bool { return true }
func (g *gatedLog) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g *gatedLog) WithGroup(string) slog.Handler            { return g }
func (g *gatedLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "lbd: node state changed" {
		g.hold.Do(func() { close(g.held) })
		<-g.gate
	}
	return nil
}

// TestNoConnectionOfADownNodeIsHandedOut reproduces the window between a node shown down and
// its connections retired: the node's idle pooled connections are dead (the proxy closed
// them), the table marks the node down, and the transition's handler is stuck in a slow log
// handler. Without go-sql-driver's liveness check, a checkout of one of those connections
// would fail the statement with "invalid connection"; it must get a connection of the other
// node instead.
func TestNoConnectionOfADownNodeIsHandedOut(t *testing.T) {
	srvs := startFakes(t, 2, mysqlfake.Config{})
	logs := newGatedLog()
	db, c := openFakeDB(t, srvs, "checkConnLiveness=false", append(quiet(), WithLogger(slog.New(logs)))...)
	t.Cleanup(logs.open) // before db.Close, which waits for the handler
	db.SetMaxIdleConns(4)
	held := testkit.HoldConns(t, db, 4) // a, b, a, b (firstListed)
	// Return b's connections first, a's last: database/sql hands out the most recent first.
	for _, i := range []int{1, 3, 0, 2} {
		held[i].Close()
	}
	a, b := srvs[0], srvs[1]
	if got := c.Stats().Open(); got != 4 {
		t.Fatalf("%d open connections, want 4 idle ones", got)
	}
	a.Close() // a's pooled connections are dead now

	tn := c.table.Nodes(nil)[0]
	if tn.Addr() != a.Addr() {
		t.Fatalf("first node %s, want %s", tn.Addr(), a.Addr())
	}
	// As the prober reports it; on its own goroutine, since a handler run on the reporting
	// goroutine would be stuck in the log.
	go c.table.Probed(tn, c.cfg.clock.Now(), errors.New("connection refused"), 0)
	waitFor(t, 5*time.Second, "the node to show down in Stats", func() bool {
		s, _ := nodeState(c, a.Addr())
		return s == StateDown
	})
	logs.waitHeld(t)
	before := b.Commands()
	for i := range 4 {
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatalf("statement %d after the node showed down: %v (a connection of the down node was handed out)", i, err)
		}
	}
	if got := b.Commands() - before; got < 4 {
		t.Fatalf("the other node ran %d commands, want at least the 4 statements", got)
	}
}

// TestTransitionHandlingDoesNotHoldTheStatement: a statement's fatal error takes its node down;
// the transition's handling (log line, retiring) is stuck in a slow log handler, and the
// statement still returns to its caller, since that handling runs on the Connector's own
// goroutine. Once the handler is free, the log line and the retiring follow.
func TestTransitionHandlingDoesNotHoldTheStatement(t *testing.T) {
	srvs := startFakes(t, 2, mysqlfake.Config{})
	logs := newGatedLog()
	db, c := openFakeDB(t, srvs, "fatalErrorThreshold=1", append(quiet(), WithLogger(slog.New(logs)))...)
	t.Cleanup(logs.open)
	db.SetMaxIdleConns(4)
	// Two idle connections on each node, a's returned last: database/sql hands out the most
	// recent first.
	held := testkit.HoldConns(t, db, 4) // a, b, a, b (firstListed)
	for _, i := range []int{1, 3, 0, 2} {
		held[i].Close()
	}
	a := srvs[0]
	a.AddFault(mysqlfake.Fault{Phase: mysqlfake.PhaseCommand, Match: mysqlfake.QueryContains("SELECT 2"),
		Bytes: mysqlfake.Raw(nil), After: mysqlfake.Reset, Times: 1})
	done := make(chan error, 1)
	go func() {
		cn, err := db.Conn(context.Background())
		if err != nil {
			done <- err
			return
		}
		defer cn.Close()
		_, err = cn.ExecContext(context.Background(), "SELECT 2")
		done <- err
	}()
	var err error
	waitFor(t, 5*time.Second, "the failed statement to return while the log handler is stuck", func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if err == nil {
		t.Fatal("the statement hit by the reset succeeded")
	}
	if s, _ := nodeState(c, a.Addr()); s != StateDown {
		t.Fatalf("%s is %v after a fatal error with fatalErrorThreshold=1, want down (statement error: %v)", a.Addr(), s, err)
	}
	logs.waitHeld(t)
	logs.open()
	waitFor(t, 5*time.Second, "the down node's idle connection to be closed", func() bool { return a.Open() <= 1 })
}

// TestStatementModeKeepsNoConnectionOfADownNode: statement mode's kept-aside physical
// connection (the one a LAST_INSERT_ID() after an INSERT runs on) is on a node that shows down
// while its transition's handling is stuck; the next statement must not be sent on it.
func TestStatementModeKeepsNoConnectionOfADownNode(t *testing.T) {
	srvs := startFakes(t, 2, mysqlfake.Config{})
	logs := newGatedLog()
	db, c := openFakeDB(t, srvs, "balance=statement&checkConnLiveness=false", append(quiet(), WithLogger(slog.New(logs)))...)
	t.Cleanup(logs.open)
	db.SetMaxOpenConns(1) // one logical connection, handed out again and again
	if _, err := db.Exec("INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	a := srvs[0]
	tn := c.table.Nodes(nil)[0]
	if ns, _ := c.Stats().Node(a.Addr()); ns.Open != 1 || tn.Addr() != a.Addr() {
		t.Fatalf("%s holds %d connections, want the INSERT's", a.Addr(), ns.Open)
	}
	a.Close()
	go c.table.Probed(tn, c.cfg.clock.Now(), errors.New("connection refused"), 0)
	waitFor(t, 5*time.Second, "the node to show down in Stats", func() bool {
		s, _ := nodeState(c, a.Addr())
		return s == StateDown
	})
	logs.waitHeld(t)
	if _, err := db.Exec("SELECT LAST_INSERT_ID()"); err != nil {
		t.Fatalf("statement after the node showed down: %v (its kept-aside connection was used)", err)
	}
}
