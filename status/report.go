package status

import (
	"time"

	"github.com/lbd-go/lbd"
)

// Report is the status page's JSON document (GET with ?format=json): a Connector's Stats, the
// open connections per node over the last minutes, and when it was taken. Field names are
// snake_case; durations are in seconds; counters are cumulative since the Connector was
// created.
//
// Its size is bounded whatever the fleet: Nodes is one page of the node list (?offset=, ?limit=,
// at most MaxPageSize rows; DefaultPageSize by default), Summary adds up every node, and the
// history names at most ChartNodes nodes a sample.
type Report struct {
	Now     time.Time `json:"now"`
	Balance string    `json:"balance"` // "connection" or "statement"
	Logical int       `json:"logical"` // connections database/sql holds open (see lbd.Stats.Logical)
	// NodesTotal is how many nodes the Connector has; Nodes are those from Offset on, in the
	// order of Stats.
	NodesTotal int          `json:"nodes_total"`
	Offset     int          `json:"offset"`
	Summary    Summary      `json:"summary"`
	Nodes      []Node       `json:"nodes"`
	Recent     []Transition `json:"recent"` // the latest state changes, oldest first
	History    History      `json:"history"`
	// Policy is the balance policy: "least-load" or "least-connections".
	Policy string `json:"balance_policy"`
	// LocalZone is the client's zone ("" when zones are off) and ZoneLocal whether the picks
	// stay in it now (see lbd.Stats.ZoneLocal).
	LocalZone string `json:"local_zone"`
	ZoneLocal bool   `json:"zone_local"`
	// Group is the Connector's group and IsolatedGroups the groups its default picks leave out
	// (see lbd.Stats.Group); "" and empty when none.
	Group          string   `json:"group"`
	IsolatedGroups []string `json:"isolated_groups"`
}

// Summary adds up every node of the Connector, on every page.
type Summary struct {
	States        map[string]int `json:"states"` // nodes by state name ("up", "down", "draining")
	Open          int            `json:"open"`
	Idle          int            `json:"idle"`
	InUse         int            `json:"in_use"`
	Dials         uint64         `json:"dials"`
	DialFailures  uint64         `json:"dial_failures"`
	FatalErrors   uint64         `json:"fatal_errors"`
	Probes        uint64         `json:"probes"`
	ProbeFailures uint64         `json:"probe_failures"`
}

// Node is one node's row of the table (see lbd.NodeStats). Role is nodes.Role's name
// ("primary", "replica", "standby", "unknown"); RetiredBy and TransitionsBy are keyed by the
// names lbd.RetireReason and lbd.TransitionCause give. Warmup is the slow-start progress from 0
// to 1; EffectiveWeight is Weight × max(Warmup, 0.1) × Speed, what new connections go by.
type Node struct {
	Addr            string            `json:"addr"`
	State           string            `json:"state"`
	Standby         bool              `json:"standby"`
	Role            string            `json:"role"`
	RoleError       string            `json:"role_error"` // the latest failed role check ("" when none)
	Weight          int               `json:"weight"`
	Warmup          float64           `json:"warmup"`
	EffectiveWeight float64           `json:"effective_weight"`
	PassiveSignals  uint64            `json:"passive_signals"`
	Open            int               `json:"open"`
	Idle            int               `json:"idle"`
	InUse           int               `json:"in_use"`
	Dials           uint64            `json:"dials"`
	DialFailures    uint64            `json:"dial_failures"`
	Retired         uint64            `json:"retired"`
	RetiredBy       map[string]uint64 `json:"retired_by"`
	FatalErrors     uint64            `json:"fatal_errors"`
	Transitions     uint64            `json:"transitions"`
	TransitionsBy   map[string]uint64 `json:"transitions_by"`
	Probes          uint64            `json:"probes"`
	ProbeFailures   uint64            `json:"probe_failures"`
	LastProbe       float64           `json:"last_probe_seconds"`
	LastError       string            `json:"last_error"`
	// Latency is the node's latency estimate in seconds and Speed the factor
	// balancePolicy=least-load gives it (see lbd.NodeStats.Latency and Speed).
	Latency float64 `json:"latency_seconds"`
	Speed   float64 `json:"speed"`
	// Zone is the node's zone ("" when none; see lbd.NodeStats.Zone).
	Zone string `json:"zone"`
	// Groups are the node's groups, in name order (empty when none; see lbd.NodeStats.Groups).
	Groups []string `json:"groups"`
}

// Transition is one state change (see lbd.Transition). RoleFrom and RoleTo differ for a role
// change (cause "role") only.
type Transition struct {
	At       time.Time `json:"at"`
	Node     string    `json:"node"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Cause    string    `json:"cause"`
	Reason   string    `json:"reason"`
	Removed  bool      `json:"removed"`
	RoleFrom string    `json:"role_from"`
	RoleTo   string    `json:"role_to"`
}

// History is the open connections per node, sampled every Interval seconds, oldest first.
type History struct {
	Interval float64  `json:"interval_seconds"`
	Samples  []Sample `json:"samples"`
}

// Sample is one sampling: the open physical connections of the ChartNodes nodes that held the
// most then, by address, and the sum over the others.
type Sample struct {
	At     time.Time      `json:"at"`
	Open   map[string]int `json:"open"`
	Others Others         `json:"others"`
}

// Others is the part of a sample not kept by node: how many nodes, and their open connections
// in all.
type Others struct {
	Nodes int `json:"nodes"`
	Open  int `json:"open"`
}

// Paging of the node table in the JSON document (?offset=, ?limit=).
const (
	// DefaultPageSize is how many nodes a Report shows when the request sets no limit.
	DefaultPageSize = 200
	// MaxPageSize is the largest limit a request may ask for; a larger one is refused (400).
	// A page of it is about 2 MiB of JSON.
	MaxPageSize = 2000
)

// report turns a Stats snapshot into the page's document, with the nodes from offset on, at
// most limit of them.
func report(st lbd.Stats, now time.Time, offset, limit int) Report {
	offset = min(max(offset, 0), len(st.Nodes))
	page := st.Nodes[offset:min(offset+max(limit, 0), len(st.Nodes))]
	r := Report{Now: now, Balance: st.Balance.String(), Logical: st.Logical,
		NodesTotal: len(st.Nodes), Offset: offset, Summary: summarize(st.Nodes),
		Nodes: make([]Node, len(page)), Recent: make([]Transition, len(st.Recent))}
	r.Policy = st.BalancePolicy.String()
	r.LocalZone, r.ZoneLocal = st.LocalZone, st.ZoneLocal
	r.Group, r.IsolatedGroups = st.Group, append([]string{}, st.IsolatedGroups...)
	for i, n := range page {
		r.Nodes[i] = Node{
			Addr: n.Addr, State: n.State.String(), Standby: n.Standby, Role: n.Role.String(), RoleError: n.RoleError,
			Weight: n.Weight, Warmup: n.Warmup, EffectiveWeight: n.EffectiveWeight, PassiveSignals: n.PassiveSignals,
			Open: n.Open, Idle: n.Idle, InUse: n.InUse,
			Dials: n.Dials, DialFailures: n.DialFailures, Retired: n.Retired, FatalErrors: n.FatalErrors,
			Transitions: n.Transitions, Probes: n.Probes, ProbeFailures: n.ProbeFailures,
			LastProbe: n.LastProbe.Seconds(), LastError: n.LastError,
			RetiredBy: make(map[string]uint64, lbd.NumRetireReasons), TransitionsBy: make(map[string]uint64, lbd.NumTransitionCauses),
		}
		r.Nodes[i].Latency, r.Nodes[i].Speed = n.Latency.Seconds(), n.Speed
		r.Nodes[i].Zone = n.Zone
		r.Nodes[i].Groups = append([]string{}, n.Groups...)
		for why, v := range n.RetiredBy {
			r.Nodes[i].RetiredBy[lbd.RetireReason(why).String()] = v
		}
		for cause, v := range n.TransitionsBy {
			r.Nodes[i].TransitionsBy[lbd.TransitionCause(cause).String()] = v
		}
	}
	for i, t := range st.Recent {
		r.Recent[i] = Transition{At: t.At, Node: t.Node, From: t.From.String(), To: t.To.String(),
			Cause: t.Cause.String(), Reason: t.Reason, Removed: t.Removed, RoleFrom: t.RoleFrom.String(), RoleTo: t.RoleTo.String()}
	}
	return r
}

// summarize adds up nodes.
func summarize(nodes []lbd.NodeStats) Summary {
	s := Summary{States: make(map[string]int, 3)}
	for _, n := range nodes {
		s.States[n.State.String()]++
		s.Open += n.Open
		s.Idle += n.Idle
		s.InUse += n.InUse
		s.Dials += n.Dials
		s.DialFailures += n.DialFailures
		s.FatalErrors += n.FatalErrors
		s.Probes += n.Probes
		s.ProbeFailures += n.ProbeFailures
	}
	return s
}
