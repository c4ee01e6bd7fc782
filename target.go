package lbd

import (
	"fmt"
	"time"

	"github.com/lbd-go/lbd/internal/role"
	"github.com/lbd-go/lbd/nodes"
)

// Target says which nodes new connections may go to, by role (DSN parameter target, option
// WithTarget), after libpq's target_session_attrs. A standby is never a target.
type Target uint8

const (
	// TargetAny (the default): every node that is not a standby.
	TargetAny = Target(role.Any)
	// TargetPrimary: primaries only. With none up, Connect waits up to FailoverTimeout for one.
	TargetPrimary = Target(role.PrimaryOnly)
	// TargetPreferPrimary: primaries; with none up, replicas and nodes of unknown role.
	TargetPreferPrimary = Target(role.PreferPrimary)
	// TargetReplica: replicas only. With none up, Connect waits up to FailoverTimeout for one.
	TargetReplica = Target(role.ReplicaOnly)
	// TargetPreferReplica: replicas; with none up, primaries and nodes of unknown role.
	TargetPreferReplica = Target(role.PreferReplica)
)

// String returns the target as the DSN writes it: "any", "primary", "prefer-primary",
// "replica" or "prefer-replica".
func (t Target) String() string { return role.Target(t).String() }

// DefaultFailoverTimeout is how long a Connect, or a statement refused by a demoted primary,
// waits for a node its target accepts (failoverTimeoutMillis). A planned OceanBase switchover or
// a MySQL/MariaDB failover tool promotes a new primary within seconds; five leave room for that
// and stay below the request deadlines applications commonly set. The caller's context cuts it
// shorter.
const DefaultFailoverTimeout = 5 * time.Second

// DefaultMaxFailoverWaiters bounds how many Connects of one Connector wait for a node their
// target accepts at once (maxFailoverWaiters): vtgate's failover buffer holds at most 1000
// requests by default for the same reason. Without a bound, a switchover under load queues
// every statement the application starts until the timeout, and they all land at once.
const DefaultMaxFailoverWaiters = 1000

// roleSettings are the parsed forms of Config.RoleCheck and Config.Target.
type roleSettings struct {
	check  role.Check
	target role.Target
	// aware says the Connector routes by role: a role check or a target other than any is
	// configured, or the read/write split. Without either, a write refused by a read-only
	// server stays what it was in lb-driver, a fatal error of the connection counted against
	// the node.
	aware bool
}

// parseRoleSettings checks RoleCheck and Target.
func (c *Config) parseRoleSettings() (roleSettings, error) {
	check, err := role.ParseCheck(c.RoleCheck)
	if err != nil {
		return roleSettings{}, fmt.Errorf("lbd: invalid DSN parameter %w", err)
	}
	if c.Target > TargetPreferReplica {
		return roleSettings{}, fmt.Errorf("lbd: invalid Target %d: use one of the Target constants", c.Target)
	}
	aware := check.Query() != "" || c.Target != TargetAny || c.ReadWriteSplit
	return roleSettings{check: check, target: role.Target(c.Target), aware: aware}, nil
}

// seedRoles gives every node of list the role a check fixes without asking (TiDB: all
// primaries); other checks and none leave the sources' roles.
func (s roleSettings) seedRoles(list []nodes.Node) []nodes.Node {
	if s.check.Fixed() == nodes.RoleUnknown {
		return list
	}
	out := make([]nodes.Node, len(list))
	for i, n := range list {
		n.Role = s.check.Fixed()
		out[i] = n
	}
	return out
}
