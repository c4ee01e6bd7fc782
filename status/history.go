package status

import (
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/ring"
)

// history keeps the latest samples of open connections per node.
type history struct{ ring *ring.Ring[Sample] }

func newHistory(size int) *history { return &history{ring: ring.New[Sample](size)} }

// add records the open connections of every node in st, taken at at.
func (h *history) add(st lbd.Stats, at time.Time) {
	s := Sample{At: at, Open: make(map[string]int, len(st.Nodes))}
	for _, n := range st.Nodes {
		s.Open[n.Addr] = n.Open
	}
	h.ring.Add(s)
}

// list returns the kept samples, oldest first (the maps are shared: read only).
func (h *history) list() []Sample { return h.ring.List() }
