package physical

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// A caller's choice of group (lbd.InGroup) rides on its context. Statement mode picks every
// statement's connection in the group the context names; a connection runs a statement whose
// context names a group only when it was picked for that group (SetGroup), so that a pooled
// connection never carries a statement out of the group its caller chose.

// groupKey is the context key of a caller's group.
type groupKey struct{}

// groupChosen is set once any context of the process has chosen a group: until then a
// statement pays one atomic load for the check, and no context lookup.
var groupChosen atomic.Bool

// WithGroup returns ctx choosing group ("": the Connector's default picks again).
func WithGroup(ctx context.Context, group string) context.Context {
	groupChosen.Store(true)
	return context.WithValue(ctx, groupKey{}, group)
}

// GroupOf returns the group ctx chooses, and false when it chooses none.
func GroupOf(ctx context.Context) (string, bool) {
	if !groupChosen.Load() {
		return "", false
	}
	g, ok := ctx.Value(groupKey{}).(string)
	return g, ok
}

// ErrOutsideGroup is returned (wrapped, naming the groups and the fix), with nothing sent, for a
// statement whose context chooses a group (lbd.InGroup) on a connection that was not picked for
// it: in connection mode, where database/sql hands out any pooled connection, or in statement
// mode on a logical connection that a transaction or session state holds on a connection of
// another group. lbd.ErrOutsideGroup documents it for users.
var ErrOutsideGroup = errors.New("lbd: the statement's context chooses a group its connection was not picked for")

// SetGroup records the group the connection was picked for ("": the Connector's default
// picks). Statement mode sets it at every bind; connection mode never does.
func (c *Conn) SetGroup(group string) { c.group = group }

// checkGroup returns ErrOutsideGroup, wrapped, when ctx chooses a group other than the one the
// connection was picked for ("" and the Connector's own group are the same choice).
func (c *Conn) checkGroup(ctx context.Context) error {
	g, ok := GroupOf(ctx)
	if !ok {
		return nil
	}
	def := c.node.table.DefaultGroup()
	want, have := g, c.group
	if want == "" {
		want = def
	}
	if have == "" {
		have = def
	}
	if want == have {
		return nil
	}
	return fmt.Errorf("%w: it chooses %s, and its connection to %s was picked for %s (in connection mode database/sql hands out any pooled connection: use balance=statement, or a Connector of its own with group=%s; in statement mode a transaction or session state holds the connection: begin it with the same context)",
		ErrOutsideGroup, groupName(want), c.node.addr, groupName(have), want)
}

// groupName names a group in an error ("": the Connector's default picks).
func groupName(g string) string {
	if g == "" {
		return "the default picks (no group)"
	}
	return fmt.Sprintf("group %q", g)
}
