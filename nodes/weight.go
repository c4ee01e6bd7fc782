package nodes

import (
	"fmt"
	"strconv"
	"strings"
)

// WeightSep separates an address from its weight in an entry of a static list (the DSN's
// lb(...) list, Connector.SetNodes): "10.0.0.1:2883*2". '*' appears in no host name, IPv6
// address or port, so an entry cannot be read two ways.
const WeightSep = '*'

// ParseEntry reads one static-list entry, "host:port" or "host:port*weight", into a Node with a
// canonical address (see Canonical). The weight is a decimal number from 1 to MaxWeight; an
// entry without one has Weight 0 (DefaultWeight). A weight of 0 is refused here, unlike from a
// source: written by hand it would most likely mean "no traffic", which lbd has no weight for.
func ParseEntry(entry string) (Node, error) {
	entry = strings.TrimSpace(entry)
	addr, w, hasWeight := strings.Cut(entry, string(WeightSep))
	n := Node{}
	if hasWeight {
		v, err := strconv.Atoi(w)
		if err != nil || v < 1 || v > MaxWeight || strings.TrimLeft(w, "0123456789") != "" {
			return Node{}, fmt.Errorf("nodes: %s has weight %s, want a whole number from 1 to %d after %q (leave \"%c...\" out for the default weight, %d)",
				quote(addr), quote(w), MaxWeight, WeightSep, WeightSep, DefaultWeight)
		}
		n.Weight = v
	}
	canon, err := Canonical(addr)
	if err != nil {
		return Node{}, err
	}
	n.Addr = canon
	return n, nil
}

// Entry returns the static-list spelling of n that ParseEntry reads back: its address, and
// "*weight" when it has a weight.
func (n Node) Entry() string {
	if n.Weight == 0 {
		return n.Addr
	}
	return n.Addr + string(WeightSep) + strconv.Itoa(n.Weight)
}
