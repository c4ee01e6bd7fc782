package lbd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lbd-go/lbd/internal/logical"
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

// Read/write splitting (readWriteSplit=true, statement mode): each statement binds a physical
// connection on a node of the role it needs. Reads that a replica may run (sqlclass.ReplicaRead:
// one SELECT without locks, session effects or a second statement) go to the least busy node
// that is not a standby, replicas and primary alike, as Taobao's UMP balanced reads over both;
// everything else goes to a primary: writes, locking reads, anything the classifier cannot prove
// read-only, everything inside a transaction and everything on a pinned logical connection.
//
// Read-your-writes by time: after a statement went to the primary in a scope, that scope's
// reads go to the primary too for ReadAfterWrite (readAfterWriteMillis, default 300 ms, UMP's
// figure), so a caller never misses what it just wrote while the replicas catch up. The scope
// is the whole Connector by default, or the context ReadYourWrites returns, so that one HTTP
// request or job gets its own guarantee without sending every caller's reads to the primary.

// DefaultReadAfterWrite is how long a scope's reads go to the primary after its write
// (readAfterWriteMillis): 300 ms, the window Taobao's UMP proxy used, well above the
// replication delay of a healthy semi-synchronous MySQL or MariaDB replica.
const DefaultReadAfterWrite = 300 * time.Millisecond

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
// the position it reached on the primary, read on the same session right after it (MariaDB
// @@last_gtid; MySQL @@global.gtid_executed, a superset): one more round trip per write. A later
// read of that scope bound to a replica first waits there until the replica has applied that
// position (MASTER_GTID_WAIT, WAIT_FOR_EXECUTED_GTID_SET), for at most readAfterWriteMillis: one
// more round trip per such read. When the wait times out or fails, the read runs on the primary
// instead. As MySQL Router's wait_for_my_writes, but the position belongs to the scope, not to
// one proxy's session, so it holds across every proxy. Reads bound to the primary, and reads of a
// scope that has written nothing, wait for nothing.

// CausalStats counts what readConsistency=gtid did (zero without it).
type CausalStats struct {
	Captures  uint64        // positions read after writes
	Waits     uint64        // reads that waited on a replica for their scope's position
	WaitTime  time.Duration // time spent in those waits, in all
	Fallbacks uint64        // of them, reads sent to the primary because the replica did not catch up in time
}
