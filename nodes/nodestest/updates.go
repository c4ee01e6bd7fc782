package nodestest

import (
	"sync"

	"github.com/lbd-go/lbd/nodes"
)

// Updates collects the sets a Source passes to the update callback of its Start, as a
// Connector would receive them: pass its Push as the callback. The zero value is ready to use;
// it is safe for concurrent use, since a source calls update from its own goroutine.
type Updates struct {
	mu   sync.Mutex
	sets []nodes.Set
}

// Push records s; pass it to a Source's Start as the update callback.
func (u *Updates) Push(s nodes.Set) {
	u.mu.Lock()
	u.sets = append(u.sets, s)
	u.mu.Unlock()
}

// Len returns how many sets were pushed.
func (u *Updates) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sets)
}

// Last returns the latest set pushed, or an empty Set when none was.
func (u *Updates) Last() nodes.Set {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.sets) == 0 {
		return nodes.Set{}
	}
	return u.sets[len(u.sets)-1]
}
