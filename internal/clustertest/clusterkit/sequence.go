package clusterkit

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/exception"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
)

// SequenceOptions are the Connector options RunSequence needs: probes every 20 ms (so a stopped
// proxy is seen down and a restarted one up within a test), no rebalancing round, turns among
// equally loaded proxies from the first, and an exception sorter that also takes 1146 (no such
// table) as fatal, so that the sequence's fatal error comes from one statement of its own and
// never from a probe.
func SequenceOptions() []lbd.Option {
	mysqlSorter, _ := exception.Lookup("mysql")
	return []lbd.Option{
		lbd.WithExceptionSorter(exception.SorterFunc(func(err error) bool {
			var me *mysql.MySQLError
			return (errors.As(err, &me) && me.Number == 1146) || mysqlSorter.IsFatal(err)
		})),
		lbd.WithCheckHealthInterval(250 * time.Millisecond), // the probe timeout is capped at it: a probe dials, and under -race on a busy host a dial can take tens of milliseconds
		lbd.WithCheckHealthTimeout(time.Second),
		lbd.WithCheckBalanceInterval(time.Hour),
		lbd.WithJitter(func(time.Duration) time.Duration { return 0 }),
		lbd.WithRand(func(int) int { return 0 }),
	}
}

// Sequence is what RunSequence did, for the exporters' tests to check their series against.
type Sequence struct {
	Fatal string // the node that returned a fatal error (one connection retired as fatal)
	Down  string // the node that went down and came back up (its idle connections retired as node_down)
	Held  int    // connections held open at the end, over both nodes
}

// RunSequence runs a scripted sequence over a two-proxy cluster through db and c (opened with
// SequenceOptions): four dials spread over both proxies, a fatal error (1146, by the sequence's
// sorter) on a connection of the first, the second proxy stopped until lbd sees it down, and started again until lbd
// sees it up; then two connections are held open (closed at test end).
func RunSequence(t testing.TB, cl *lbdtest.Cluster, db *sql.DB, c *lbd.Connector) Sequence {
	t.Helper()
	db.SetMaxIdleConns(8)
	conns := make([]*sql.Conn, 4)
	for i := range conns {
		cn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := cn.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		conns[i] = cn
	}
	first, second := cl.Proxy(0), cl.Proxy(1)
	// The first connection went to the first proxy (WithRand 0).
	if _, err := conns[0].ExecContext(t.Context(), "SELECT * FROM no_such_table"); err == nil {
		t.Fatal("SELECT from a missing table succeeded")
	}
	for _, cn := range conns {
		cn.Close()
	}
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the second node down", func() bool {
		ns, _ := c.Stats().Node(second.Addr())
		return ns.State == lbd.StateDown
	})
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the second node up again", func() bool {
		ns, _ := c.Stats().Node(second.Addr())
		return ns.State == lbd.StateUp
	})
	held := make([]*sql.Conn, 2)
	for i := range held {
		cn, err := db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := cn.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
		held[i] = cn
		t.Cleanup(func() { cn.Close() })
	}
	return Sequence{Fatal: first.Addr(), Down: second.Addr(), Held: len(held)}
}
