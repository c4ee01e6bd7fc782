package nodetable

import (
	"errors"
	"fmt"
	"slices"

	"github.com/lbd-go/lbd/internal/pick"
	"github.com/lbd-go/lbd/nodes"
)

// Groups (nodes.Node.Groups; lbd's group, isolatedGroups and InGroup).
//
// A pick may be kept to the nodes of one group: the picks that name a group choose among its
// nodes alone, and the picks that name none among the nodes of Config.Group, or, without one,
// among every node outside the Config.Isolated groups. The nodes that share one set of groups
// (none, "analytics", "analytics+reporting", ...) share a set of pick indexes of their own,
// numPickIndexes of them, as the local zone's nodes do: a node sits in exactly one set however
// many groups it belongs to, so its counts move in one index as before. A pick looks at the
// indexes of every set its group takes in (a bit mask over the sets, worked out when a set
// comes or goes, never per pick), so it costs O(sets) ≤ O(nodes.MaxGroupSets), whatever the
// number of nodes, and allocates nothing. Without groups there is one set, the nodes of no
// group, and a pick looks at the same indexes as before groups existed.
//
// A pick for the primary (the split's writes, target=primary or prefer-primary) that finds no
// node of the group takes a primary of any group: an analytics group of replicas reads on its
// replicas and writes on the cluster's primary. Every other pick that finds no node of the
// group finds none; the caller waits for one as it waits for a role (failoverTimeoutMillis).
// Panic mode, when no node at all takes connections, dials only nodes of the group. Zones
// apply within the group as everywhere: the local zone's capacity rule is the whole table's.

// maxGroupSets bounds the sets of groups a table holds at once: the nodes of one list may have
// nodes.MaxGroupSets, and nodes of earlier lists that still drain or wait for their removal
// keep theirs. A mask of 64 bits holds them.
const maxGroupSets = 64

// groupSet is one set of groups a node may belong to. Nodes of equal sets share one value; it
// never changes once made.
type groupSet struct {
	names    string // nodes.Node.Groups in name order (nodes.JoinGroups); "" for no group
	isolated bool   // one of the names is in Config.Isolated
}

// noGroup is the set of the nodes of no group: set 0 of every table.
var noGroup = &groupSet{}

// groupTable is a table's sets of groups, guarded by the table's mutex.
type groupTable struct {
	group    string   // Config.Group
	isolated []string // Config.Isolated
	sets     []*groupSet
	members  []int             // nodes of each set (0: the place may be reused; set 0 is never)
	byName   map[string]uint64 // group name → the sets that have it, one bit per set
	all      uint64            // every set in use, set 0 always
	def      uint64            // the sets the picks that name no group choose from
}

func (g *groupTable) init(group string, isolated []string) {
	g.group, g.isolated = group, slices.Clone(isolated)
	g.sets, g.members = []*groupSet{noGroup}, []int{0}
	g.masks()
}

// checkGroupConfig refuses a Config.Group or Config.Isolated name that nodes.CheckGroup refuses.
func checkGroupConfig(group string, isolated []string) error {
	if group != "" {
		if err := nodes.CheckGroup(group); err != nil {
			return fmt.Errorf("group: %w", err)
		}
	}
	for _, g := range isolated {
		if err := nodes.CheckGroup(g); err != nil {
			return fmt.Errorf("isolatedGroups: %w", err)
		}
	}
	return nil
}

// mask returns the sets a pick for group chooses from: "" for the picks that name none.
func (g *groupTable) mask(group string) uint64 {
	if group == "" {
		return g.def
	}
	return g.byName[group]
}

// masks works out all, def and byName again after a set came or went.
func (g *groupTable) masks() {
	g.all, g.def = 1, 0
	clear(g.byName)
	for i, s := range g.sets {
		if i > 0 && g.members[i] == 0 {
			continue
		}
		bit := uint64(1) << i
		g.all |= bit
		if g.group == "" && !s.isolated {
			g.def |= bit
		}
		for _, name := range nodes.SplitGroups(s.names) {
			if g.byName == nil {
				g.byName = make(map[string]uint64)
			}
			g.byName[name] |= bit
		}
	}
	if g.group != "" {
		g.def = g.byName[g.group]
	}
}

// errTooManyGroupSets: the table holds maxGroupSets sets of groups already.
var errTooManyGroupSets = errors.New("node table: too many distinct sets of groups at once (the nodes of earlier lists still drain); apply the list again once they have")

// setFor returns the place of the set names (nodes.JoinGroups form), making it when no node
// has it yet.
func (g *groupTable) setFor(names string) (int, error) {
	free := -1
	for i, s := range g.sets {
		switch {
		case g.members[i] > 0 || i == 0:
			if s.names == names {
				return i, nil
			}
		case free < 0:
			free = i
		}
	}
	if free < 0 {
		if len(g.sets) == maxGroupSets {
			return 0, errTooManyGroupSets
		}
		free = len(g.sets)
		g.sets, g.members = append(g.sets, nil), append(g.members, 0)
	}
	s := &groupSet{names: names}
	for _, name := range nodes.SplitGroups(names) {
		if slices.Contains(g.isolated, name) {
			s.isolated = true
		}
	}
	g.sets[free] = s
	return free, nil
}

// join counts one more node in set i and reports whether the set was not in use.
func (g *groupTable) join(i int) bool {
	g.members[i]++
	return g.members[i] == 1 && i > 0
}

// leave counts one node fewer in set i and reports whether the set is no longer in use.
func (g *groupTable) leave(i int) bool {
	g.members[i]--
	return g.members[i] == 0 && i > 0
}

// growIndexesLocked makes room in the pick indexes for sets sets of groups.
func (t *Table[P]) growIndexesLocked(sets int) {
	if n := sets * numPickIndexes; len(t.byOpen) < n {
		t.byOpen = append(t.byOpen, make([]pick.Index[*Node[P]], n-len(t.byOpen))...)
		t.byInUse = append(t.byInUse, make([]pick.Index[*Node[P]], n-len(t.byInUse))...)
		t.turns = append(t.turns, make([]uint64, n-len(t.turns))...)
	}
}

// setGroupsLocked gives n the groups its source reports now (nodes.Node.Groups; any order),
// moving its pick entries to the indexes of its new set. A node the table is adding has no set
// yet (groupsNow nil). It fails only when the table holds too many sets at once.
func (t *Table[P]) setGroupsLocked(n *Node[P], groups string) error {
	if groups != "" {
		groups = nodes.JoinGroups(nodes.SplitGroups(groups)...)
	}
	old := n.groupsNow.Load()
	if old != nil && old.names == groups {
		return nil
	}
	i, err := t.groups.setFor(groups)
	if err != nil {
		return err
	}
	t.growIndexesLocked(len(t.groups.sets))
	indexed := n.byOpen.Indexed()
	t.unindexLocked(n)
	changed := t.groups.join(i)
	if old != nil && t.groups.leave(int(n.class)) {
		changed = true
	}
	n.class = uint8(i)
	n.groupsNow.Store(t.groups.sets[i])
	if changed {
		t.groups.masks()
	}
	if indexed {
		t.indexLocked(n)
	}
	return nil
}

// leaveGroupsLocked counts n, which leaves the table, out of its set.
func (t *Table[P]) leaveGroupsLocked(n *Node[P]) {
	if t.groups.leave(int(n.class)) {
		t.groups.masks()
	}
}

// InGroup reports whether a pick for group ("" for the picks that name none: Config.Group, or
// every node outside the Config.Isolated groups) may choose n, with one atomic load and no
// mutex: statement mode asks it of the connection a logical connection holds.
func (t *Table[P]) InGroup(n *Node[P], group string) bool {
	s := n.groupsNow.Load()
	if group == "" {
		if t.cfg.Group == "" {
			return !s.isolated
		}
		group = t.cfg.Group
	}
	return nodes.InGroup(s.names, group)
}

// GroupsOf returns n's groups in nodes.JoinGroups form ("" for none), with one atomic load and
// no mutex: what a statement's telemetry names.
func (t *Table[P]) GroupsOf(n *Node[P]) string {
	if s := n.groupsNow.Load(); s != nil {
		return s.names
	}
	return ""
}

// DefaultGroup returns Config.Group: the group of the picks that name none ("" when they keep
// only out of the isolated groups).
func (t *Table[P]) DefaultGroup() string { return t.cfg.Group }

// Groups reports, for the group name, how many nodes the table holds in it and how many of
// them take connections now; for "", those of the picks that name no group. It takes the
// mutex and is O(nodes): for errors and status, not for picks.
func (t *Table[P]) Groups(group string) (count, active int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	mask := t.groups.mask(group)
	for _, n := range t.order {
		if mask>>n.class&1 != 0 {
			count++
			if n.byOpen.Indexed() && n.state == Up {
				active++
			}
		}
	}
	return count, active
}
