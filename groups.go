package lbd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/internal/physical"
	"github.com/lbd-go/lbd/nodes"
)

// Groups: a node may belong to named groups (nodes.Node.Groups): the static list spells them
// host:port+group, the config-server and etcd documents carry a "group" map, a DNS name
// written name+group gives its groups to every node it resolves to, and SetNodes takes the
// static list's spelling. A statement whose context chooses a group (InGroup) runs on a node
// of that group, and every other statement on a node of the Connector's group (group), or,
// without one, on a node outside the isolated groups (isolatedGroups): so a reporting job has
// replicas of its own, and the application's everyday reads never reach them. See
// docs/reference.md, group.

// InGroup returns a context whose statements run on the nodes of group alone, as MaxScale's
// server labels, TiProxy's labels and MySQL Router's tags route a session: a report or an
// export kept to the replicas set aside for it (the group may be one of isolatedGroups). With
// readWriteSplit, its reads go to the group's replicas (to its primary when none serves, or as
// one more reader with primaryReads), and its writes to the group's primary, or the cluster's
// when the group has none up. While no node of the group is up, a statement waits up to
// failoverTimeoutMillis for one, then fails with a *ConnectError naming the group.
// InGroup(ctx, "") chooses the Connector's default picks again.
//
// It needs balance=statement, which picks a connection for every statement: in connection
// mode database/sql hands out whichever pooled connection it has, so a statement whose context
// chooses another group than the Connector's own (group) fails there with ErrOutsideGroup,
// nothing sent; open a Connector of its own with group=... for that group instead. So does a
// statement in a transaction or under session state begun with another group's context.
// A name that is not a group name (nodes.CheckGroup) fails each statement at once.
func InGroup(ctx context.Context, group string) context.Context {
	return physical.WithGroup(ctx, group)
}

// ErrOutsideGroup is returned (wrapped, naming the groups and the fix), with nothing sent, for
// a statement whose context chooses a group (InGroup) on a connection that was not picked for
// it: in connection mode, where database/sql hands out any pooled connection (a Connector's
// own group, DSN parameter group, is the one a context may choose there), or in statement mode
// on a connection a transaction or session state holds in another group.
var ErrOutsideGroup = physical.ErrOutsideGroup

// WithGroup sets the group the picks of statements whose context chooses none keep to,
// overriding the group DSN parameter ("": none).
func WithGroup(name string) Option {
	return func(c *Config) error {
		if name != "" {
			if err := nodes.CheckGroup(name); err != nil {
				return fmt.Errorf("lbd: WithGroup: %w", err)
			}
		}
		c.Group = name
		return nil
	}
}

// WithIsolatedGroups sets the groups whose nodes the picks of statements whose context chooses
// no group leave out, overriding the isolatedGroups DSN parameter (none: no group is kept out).
func WithIsolatedGroups(names ...string) Option {
	return func(c *Config) error {
		if err := checkGroupNames(names); err != nil {
			return fmt.Errorf("lbd: WithIsolatedGroups: %w", err)
		}
		c.IsolatedGroups = slices.Clone(names)
		return nil
	}
}

// parseGroup reads the group DSN parameter.
func parseGroup(c *Config, v string) error {
	if err := nodes.CheckGroup(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "nodes: ") + " (leave group out for the nodes of every group but the isolated ones)")
	}
	c.Group = v
	return nil
}

// parseIsolatedGroups reads the isolatedGroups DSN parameter: group names separated by commas.
func parseIsolatedGroups(c *Config, v string) error {
	names := strings.Split(v, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	if err := checkGroupNames(names); err != nil {
		return fmt.Errorf("%s (write isolatedGroups=analytics or isolatedGroups=analytics,reporting)", strings.TrimPrefix(err.Error(), "nodes: "))
	}
	c.IsolatedGroups = names
	return nil
}

// checkGroupNames refuses a name nodes.CheckGroup refuses, or one given twice.
func checkGroupNames(names []string) error {
	for i, g := range names {
		if err := nodes.CheckGroup(g); err != nil {
			return err
		}
		if slices.Contains(names[:i], g) {
			return fmt.Errorf("group %q is given twice", g)
		}
	}
	return nil
}

// checkGroups is settle's check of Groups, Group and IsolatedGroups. A configuration in which a
// named group cannot exist is refused: with a static list (no node source), Group and each
// isolated group must be a group of some listed node, and some node must be outside the
// isolated groups. A node source's groups come at run time, so then only the names are checked;
// a list without a node of Group is logged (warnGroups), and its statements wait and fail.
func (c *Config) checkGroups() error {
	for addr, g := range c.Groups {
		if !slices.Contains(c.Nodes, addr) {
			return fmt.Errorf("lbd: Groups names %q, which is not in Nodes; give groups only to listed proxies", addr)
		}
		if err := nodes.CheckGroups(g); err != nil {
			return fmt.Errorf("lbd: Groups[%q]: %w (write the proxy as host:port+group)", addr, err)
		}
	}
	if err := nodes.CheckGroupSets(staticList(c)); err != nil {
		return fmt.Errorf("lbd: proxy list: %w", err)
	}
	if c.Group != "" {
		if err := nodes.CheckGroup(c.Group); err != nil {
			return fmt.Errorf("lbd: group: %w (DSN parameter group, option WithGroup)", err)
		}
	}
	if err := checkGroupNames(c.IsolatedGroups); err != nil {
		return fmt.Errorf("lbd: isolatedGroups: %w (DSN parameter isolatedGroups, option WithIsolatedGroups)", err)
	}
	if c.Group != "" && len(c.IsolatedGroups) > 0 {
		return fmt.Errorf("lbd: isolatedGroups keeps groups out of the picks that choose no group, but with group=%s every pick chooses one: leave isolatedGroups out", c.Group)
	}
	if c.source != nil || (c.Network != Network && c.Network != "") || len(c.Nodes) == 0 {
		return nil // a node source gives the groups at run time
	}
	list := staticList(c)
	carried := func(g string) bool {
		return slices.ContainsFunc(list, func(n nodes.Node) bool { return nodes.InGroup(n.Groups, g) })
	}
	if c.Group != "" && !carried(c.Group) {
		return fmt.Errorf("lbd: group=%s, but no proxy of the list is in group %s: write one as host:port+%s", c.Group, c.Group, c.Group)
	}
	for _, g := range c.IsolatedGroups {
		if !carried(g) {
			return fmt.Errorf("lbd: isolatedGroups names %s, but no proxy of the list is in it: write one as host:port+%s, or leave %s out", g, g, g)
		}
	}
	if len(c.IsolatedGroups) > 0 && !slices.ContainsFunc(list, func(n nodes.Node) bool { return !isolated(n.Groups, c.IsolatedGroups) }) {
		return fmt.Errorf("lbd: every proxy of the list is in a group of isolatedGroups (%s), so a statement that chooses no group would have none: leave a proxy outside them, or set group", strings.Join(c.IsolatedGroups, ","))
	}
	return nil
}

// isolated reports whether groups (nodes.Node.Groups) has one of names.
func isolated(groups string, names []string) bool {
	return slices.ContainsFunc(names, func(g string) bool { return nodes.InGroup(groups, g) })
}

// warnGroups logs a node list from a node source or SetNodes in which the Connector's group has
// no node, or every node is isolated: statements that choose no group wait failoverTimeoutMillis
// for a node, then fail.
func (c *Connector) warnGroups(list []nodes.Node) {
	switch {
	case c.cfg.Group != "":
		if !slices.ContainsFunc(list, func(n nodes.Node) bool { return nodes.InGroup(n.Groups, c.cfg.Group) }) {
			c.cfg.Logger.Warn("lbd: the node list has no node in the Connector's group: statements that choose no group wait failoverTimeoutMillis, then fail",
				"group", c.cfg.Group, "nodes", len(list))
		}
	case len(c.cfg.IsolatedGroups) > 0:
		if !slices.ContainsFunc(list, func(n nodes.Node) bool { return !isolated(n.Groups, c.cfg.IsolatedGroups) }) {
			c.cfg.Logger.Warn("lbd: every node of the list is in an isolated group: statements that choose no group wait failoverTimeoutMillis, then fail",
				"isolated_groups", strings.Join(c.cfg.IsolatedGroups, ","), "nodes", len(list))
		}
	}
}

// retireOutsideGroup retires, in connection mode, the connections of every node the
// Connector's picks no longer take since a node list moved it out of the Connector's group or
// into an isolated one: as for a role the target no longer accepts, idle ones close now and
// in-use ones at their return. In statement mode each statement's pick keeps to its group.
func (c *Connector) retireOutsideGroup() {
	if c.cfg.Balance != BalanceConnection || (c.cfg.Group == "" && len(c.cfg.IsolatedGroups) == 0) {
		return
	}
	for _, tn := range c.table.Nodes(nil) {
		if !c.table.InGroup(tn, "") {
			tn.Payload().RetireAll(physical.Role)
		}
	}
}

// Zones: every node may carry a zone (nodes.Node.AZ) from its source: the static list spells it
// "host:port~zone" (after "*weight" and "#role"), the config-server and etcd documents give the
// zone of each proxy their az.proxy sets name, and DNS carries none (see docs/reference.md,
// localZone). With a local zone set (localZone, or LBD_LOCAL_ZONE), picks stay among the local
// zone's up proxies while at least zoneMinUpPercent of its listed proxies take connections,
// and at least one does; below that they spread over the up proxies of every zone, from the
// pick after the state change that took the zone below (so within one probe interval of the
// zone going down), and come back at the pick after it recovers. A target whose roles the
// local zone has no proxy of is picked from every zone. Panic mode ignores zones.

// EnvLocalZone is the environment variable that replaces the localZone DSN parameter when it
// is set (set but empty, it turns zones off), so that machines in different zones share one
// DSN.
const EnvLocalZone = "LBD_LOCAL_ZONE"

// DefaultZoneMinUpPercent is zoneMinUpPercent's default: the local zone keeps the traffic while
// at least half of its listed proxies take connections.
const DefaultZoneMinUpPercent = nodetable.DefaultZoneMinUpPercent

// parseLocalZone reads localZone: a zone name as nodes.CheckZone accepts, or "" for none.
func parseLocalZone(c *Config, v string) error {
	if v != "" {
		if err := nodes.CheckZone(v); err != nil {
			return err
		}
	}
	c.LocalZone = v
	return nil
}
