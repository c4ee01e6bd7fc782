package lbd

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lbd-go/lbd/internal/logical"
	"github.com/lbd-go/lbd/internal/physical"
)

// BalanceMode says what lbd balances over the proxies: each new physical connection
// (BalanceConnection, the default) or each checkout of a pooled connection
// (BalanceStatement). DSN parameter balance=connection|statement; option WithBalance.
//
// Connection mode spreads connections evenly, but database/sql hands out the most recently
// returned idle connection first, so until the pool is busy most statements go to the few
// proxies holding those connections: with 30 pooled connections over 3 proxies, one worker
// sends every statement to one proxy and four workers give a CV of about 40% between proxies.
// Statement mode binds a pooled (logical) connection to a physical connection on the proxy with
// the fewest physical connections in use at every checkout, as lb-driver does, at the cost of
// classifying each statement's text (see the README for the measured cost and the pins that
// keep a logical connection on one physical connection).
type BalanceMode uint8

const (
	// BalanceConnection balances new physical connections by open count; database/sql pools
	// the physical connections themselves.
	BalanceConnection BalanceMode = iota
	// BalanceStatement balances every checkout: database/sql pools logical connections and lbd
	// binds each to a physical connection on the least busy proxy.
	BalanceStatement
)

// String returns the DSN spelling: "connection" or "statement".
func (m BalanceMode) String() string {
	switch m {
	case BalanceConnection:
		return "connection"
	case BalanceStatement:
		return "statement"
	}
	return fmt.Sprintf("BalanceMode(%d)", uint8(m))
}

// parseBalanceMode reads the balance DSN parameter. Only the exact spellings are accepted, so
// a typo is an error rather than the default.
func parseBalanceMode(v string) (BalanceMode, error) {
	switch v {
	case "connection":
		return BalanceConnection, nil
	case "statement":
		return BalanceStatement, nil
	}
	return 0, fmt.Errorf("must be connection or statement")
}

// WithBalance sets the balance mode, overriding the balance DSN parameter.
func WithBalance(m BalanceMode) Option {
	return func(c *Config) error {
		if m != BalanceConnection && m != BalanceStatement {
			return fmt.Errorf("lbd: WithBalance: unknown mode %v", m)
		}
		c.Balance = m
		return nil
	}
}

// autocommitOff reports a DSN that makes go-sql-driver run SET autocommit=0 on every
// connection.
func autocommitOff(params map[string]string) bool {
	for k, v := range params {
		if strings.EqualFold(k, "autocommit") {
			v = strings.Trim(v, "'\"` ")
			return v == "0" || strings.EqualFold(v, "false") || strings.EqualFold(v, "off")
		}
	}
	return false
}

// DefaultReadAfterWrite is how long a scope's reads go to the primary after its write
// (readAfterWriteMillis): 300 ms, the window Taobao's UMP proxy used, well above the
// replication delay of a healthy semi-synchronous MySQL or MariaDB replica.
const DefaultReadAfterWrite = 300 * time.Millisecond

// ConnProxy reports the proxy ("host:port") that conn is on now, for logs and debugging. In
// connection mode that is the proxy of the physical connection database/sql holds for conn. In
// statement mode it is the proxy of the physical connection the logical one holds: the one its
// latest statement ran on, and that a transaction begun on conn runs on, for as long as conn
// stays checked out; "" before its first statement. The proxy of a transaction is that of the
// *sql.Conn it was begun on; a statement run through the *sql.DB itself has no connection to
// ask afterwards, so run it on a *sql.Conn to learn its proxy. ConnProxy costs nothing unless
// called. It fails when conn is closed (sql.ErrConnDone) or was not opened through lbd.
func ConnProxy(conn *sql.Conn) (string, error) {
	var addr string
	err := conn.Raw(func(dc any) error {
		if p, ok := dc.(*physical.Conn); ok {
			addr = p.Node().Addr()
			return nil
		}
		if a, ok := logical.Proxy(dc); ok {
			addr = a
			return nil
		}
		return fmt.Errorf("lbd: ConnProxy: the connection is a %T, not one of lbd's (open the *sql.DB with lbd.Open or lbd.NewConnector)", dc)
	})
	return addr, err
}

// OnPrimary returns a context whose statements go to the primary with readWriteSplit, reads
// included, as gorm.io/plugin/dbresolver's clause.Write does: for a read that must see the
// latest write of another process, or a report that must not run on a lagging replica. A read
// sent there does not start a read-your-writes window. Without readWriteSplit it changes
// nothing.
func OnPrimary(ctx context.Context) context.Context { return logical.OnPrimary(ctx) }

// ReadYourWrites returns a context whose statements form a read-your-writes scope of their own
// (with readWriteSplit): after a write made with it, or with a context derived from it, reads
// made with it go to the primary for readAfterWriteMillis; other callers' reads are not
// affected. Without such a scope the whole Connector is one. A scope costs one small
// allocation; it is meant per request, job or user, not per statement.
func ReadYourWrites(ctx context.Context) context.Context { return logical.ReadYourWrites(ctx) }

// Causal reads by GTID (readConsistency=gtid, with readWriteSplit): a write in a scope records
// the position it reached on the primary. A server that offers session tracking reports it in
// the write's own answer (MariaDB's last_gtid, MySQL's session_track_gtids=OWN_GTID, which lbd
// asks for on each connection it opens); elsewhere lbd reads it on the same session right after
// the write (MariaDB @@last_gtid; MySQL @@global.gtid_executed, a superset): one more round trip
// per write. A later read of that scope bound to a replica runs there once the replica has
// applied that position, proven by an earlier wait on the same connection or by a wait now
// (MASTER_GTID_WAIT, WAIT_FOR_EXECUTED_GTID_SET: one more round trip), for at most
// readAfterWriteMillis and no longer than the replica lately took to catch up; a read of a write
// younger than that catch-up time, or one whose wait fails, runs on the primary instead. As
// MySQL Router's wait_for_my_writes, but the position belongs to the scope, not to one proxy's
// session, so it holds across every proxy. Reads bound to the primary, and reads of a scope that
// has written nothing, wait for nothing. docs/design.md (read/write splitting) has the rules.

// CausalStats counts what readConsistency=gtid did (zero without it).
type CausalStats struct {
	Captures  uint64        // positions read after writes
	Reported  uint64        // of them, positions the write's own answer reported (session tracking): nothing asked
	Waits     uint64        // reads that waited on a replica for their scope's position
	Known     uint64        // reads on a replica connection a wait proved had applied their position: no wait
	WaitTime  time.Duration // time spent in those waits, in all
	Fallbacks uint64        // reads sent to the primary because the replica did not catch up in time, or was held behind after a wait timed out
}

// BalancePolicy is how a pick weighs the up nodes, in both balance modes. DSN parameter
// balancePolicy=least-load|least-connections; option WithBalancePolicy; default
// DefaultBalancePolicy.
//
// LeastConnections goes by load alone: the node with the least connections open (connection
// mode) or in use (statement mode) for its weight, counting, while little is in flight, its
// recent ones too, so that weights are shares at every concurrency. LeastLoad adds each node's
// latency estimate, a moving average of the answered statements' round trips over about half a
// second: a node clearly slower than the median node (24 % past 1.5 times its estimate plus
// 500 µs, for four 100 ms ticks in a row) gets a speed factor of the median plus 500 µs over
// its estimate (differences under 500 µs are noise), down to 1/16, which lowers its share of new work in proportion while little is in flight and
// its in-flight weight to no less than 0.4 when much is; a faster estimate gives the factor back
// by a quarter of an octave per tick. The figures are internal/nodetable's LoadBand, LoadFloor,
// LatencyWindow, SlowAfterTicks, EnterSlowSteps, RiseSteps and InUseSpeedFloor, and the
// measured effect is in docs/performance.md. NodeStats.Latency and NodeStats.Speed show the
// estimate and its effect under either policy.
type BalancePolicy uint8

const (
	// LeastConnections picks by counts and weights alone (the policy before LeastLoad).
	LeastConnections BalancePolicy = iota
	// LeastLoad picks by counts times latency estimates, with a tolerance band.
	LeastLoad
)

// DefaultBalancePolicy is the policy a DSN without balancePolicy gets.
const DefaultBalancePolicy = LeastLoad

// String returns the DSN spelling: "least-connections" or "least-load".
func (p BalancePolicy) String() string {
	switch p {
	case LeastConnections:
		return "least-connections"
	case LeastLoad:
		return "least-load"
	}
	return fmt.Sprintf("BalancePolicy(%d)", uint8(p))
}

// parseBalancePolicy reads the balancePolicy DSN parameter; only the exact spellings count.
func parseBalancePolicy(v string) (BalancePolicy, error) {
	switch v {
	case "least-load":
		return LeastLoad, nil
	case "least-connections":
		return LeastConnections, nil
	}
	return 0, fmt.Errorf("must be least-load or least-connections")
}

// WithBalancePolicy sets the balance policy, overriding the balancePolicy DSN parameter.
func WithBalancePolicy(p BalancePolicy) Option {
	return func(c *Config) error {
		if p != LeastConnections && p != LeastLoad {
			return fmt.Errorf("lbd: WithBalancePolicy: unknown policy %v; use LeastLoad or LeastConnections", p)
		}
		c.BalancePolicy = p
		return nil
	}
}
