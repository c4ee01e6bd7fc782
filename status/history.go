package status

import (
	"cmp"
	"slices"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/ring"
)

// ChartNodes is how many nodes a sample of the chart keeps by name: the 20 with the most open
// connections when it was taken (the first listed among equals). The open connections of the
// others are summed into the sample's Others, so a sample holds at most ChartNodes+1 numbers
// whatever the fleet: 10 000 nodes and the default 300 samples keep well under a mebibyte.
const ChartNodes = 20

// history keeps the latest samples of open connections per node.
type history struct{ ring *ring.Ring[Sample] }

func newHistory(size int) *history { return &history{ring: ring.New[Sample](size)} }

// add records the open connections of the ChartNodes busiest nodes in st and the sum of the
// others', taken at at.
func (h *history) add(st lbd.Stats, at time.Time) {
	s := Sample{At: at, Open: make(map[string]int, min(len(st.Nodes), ChartNodes))}
	chosen := st.Nodes
	if len(chosen) > ChartNodes {
		idx := make([]int, len(st.Nodes))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(st.Nodes[b].Open, st.Nodes[a].Open) })
		for _, i := range idx[ChartNodes:] {
			s.Others.Nodes++
			s.Others.Open += st.Nodes[i].Open
		}
		chosen = make([]lbd.NodeStats, 0, ChartNodes)
		for _, i := range idx[:ChartNodes] {
			chosen = append(chosen, st.Nodes[i])
		}
	}
	for _, n := range chosen {
		s.Open[n.Addr] = n.Open
	}
	h.ring.Add(s)
}

// list returns the kept samples, oldest first (the maps are shared: read only).
func (h *history) list() []Sample { return h.ring.List() }
