package status

import (
	"sync"
	"time"

	"github.com/lbd-go/lbd"
)

// history keeps the latest samples of open connections per node in a ring.
type history struct {
	mu   sync.Mutex
	ring []Sample
	next int // where the next sample goes
	n    int // how many are kept
}

func newHistory(size int) *history { return &history{ring: make([]Sample, size)} }

// add records the open connections of every node in st, taken at at.
func (h *history) add(st lbd.Stats, at time.Time) {
	s := Sample{At: at, Open: make(map[string]int, len(st.Nodes))}
	for _, n := range st.Nodes {
		s.Open[n.Addr] = n.Open
	}
	h.mu.Lock()
	h.ring[h.next] = s
	h.next = (h.next + 1) % len(h.ring)
	h.n = min(h.n+1, len(h.ring))
	h.mu.Unlock()
}

// list returns the kept samples, oldest first (the maps are shared: read only).
func (h *history) list() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Sample, 0, h.n)
	for i := range h.n {
		out = append(out, h.ring[(h.next-h.n+i+len(h.ring))%len(h.ring)])
	}
	return out
}
