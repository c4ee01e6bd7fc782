package lbd

import "github.com/lbd-go/lbd/internal/inspect"

// The cluster suites (internal/clustertest, a module of their own) read these facts through
// internal/inspect; see that package.
func init() {
	inspect.PreparedQueries = func(c any) map[string]int {
		s := &c.(*Connector).stmt.prepared
		s.mu.Lock()
		defer s.mu.Unlock()
		out := make(map[string]int, len(s.open))
		for q, pq := range s.open {
			out[q] = pq.refs
		}
		return out
	}
	inspect.ServerStatements = func(c any) int {
		total := 0
		for _, tn := range c.(*Connector).table.Nodes(nil) {
			for _, p := range tn.Payload().Conns() {
				total += len(p.Prepared)
			}
		}
		return total
	}
	inspect.Pinned = func(dc any) (bool, bool) {
		l, ok := dc.(*logicalConn)
		if !ok {
			return false, false
		}
		return l.pinned(), true
	}
}
