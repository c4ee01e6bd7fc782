package lbd

import (
	"fmt"

	"github.com/lbd-go/lbd/internal/nodetable"
	"github.com/lbd-go/lbd/nodes"
)

// ErrNoUpNodeLeft is returned (wrapped) by SetNodes when applying the new list would remove
// every node that is up. The additions are applied; the removals wait until one of the
// remaining nodes is up, so the application never loses its last working proxy to a bad list.
var ErrNoUpNodeLeft = nodetable.ErrNoUpNodeLeft

// SetNodes replaces the node list at run time. Nodes not known before are added in state down
// and take connections after one good probe, warming up over Config.Warmup; nodes no longer listed start draining: they take
// no new connection, their idle connections close at once and their in-use ones at return, and
// they leave Stats when their last connection closes. A list whose removals would leave no up
// node applies its additions only and returns an error wrapping ErrNoUpNodeLeft; the removals
// happen once one of the listed nodes is up. An empty or malformed list is an error and
// changes nothing. An entry may carry a weight and a role as in the DSN, "host:port*2",
// "host:port#replica", "host:port*2#primary"; one without has the default weight and an unknown
// role. Without a role check (Config.RoleCheck) the roles given here are the nodes' roles: a
// list that swaps them moves new connections to the new primary, and the Connector retires the
// connections of a node its Target no longer accepts as it does for a drain.
func (c *Connector) SetNodes(addrs []string) error {
	list := make([]nodes.Node, len(addrs))
	for i, a := range addrs {
		n, err := nodes.ParseEntry(a)
		if err != nil {
			return fmt.Errorf("lbd: node list not applied: %w", err)
		}
		list[i] = n
	}
	return c.applyNodes(nodes.Set{Nodes: list})
}

// applyNodes is SetNodes for a whole set, whose nodes may be standby: probed, but taking no
// new connection (a config-server's AZ set while the client has fallen back to the default set).
func (c *Connector) applyNodes(set nodes.Set) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if err := set.Validate(); err != nil {
		return fmt.Errorf("lbd: node list not applied: %w", err)
	}
	c.applyMu.Lock() // one list at a time, so a node is never added and forgotten at once
	defer c.applyMu.Unlock()
	added, err := c.table.SetNodes(c.roles.seedRoles(set.Canonical().Nodes), c.newNode)
	for _, tn := range added {
		c.cfg.Logger.Info("lbd: node added", "node", tn.Addr(), "state", c.table.State(tn).String())
		n := at(tn)
		c.startProbing(n)
		c.triggerProbe(n)
	}
	if err != nil {
		c.cfg.Logger.Warn("lbd: node list not fully applied", "error", err.Error())
	}
	return err
}
