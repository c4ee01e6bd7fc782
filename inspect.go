package lbd

import (
	"github.com/lbd-go/lbd/internal/inspect"
	"github.com/lbd-go/lbd/internal/logical"
)

// The cluster suites (internal/clustertest, a module of their own) read these facts through
// internal/inspect; see that package.
func init() {
	inspect.PreparedQueries = func(c any) map[string]int { return c.(*Connector).stmt.PreparedQueries() }
	inspect.ServerStatements = func(c any) int {
		total := 0
		for _, tn := range c.(*Connector).table.Nodes(nil) {
			for _, p := range tn.Payload().Conns() {
				total += len(p.Prepared)
			}
		}
		return total
	}
	inspect.Pinned = logical.Pinned
}
