// Package rolepair starts what the tests of the ORM examples run on: an in-process primary and
// read-only replica (lbdtest) and a Connector in statement mode splitting reads and writes over
// them, roles from the list, as the examples' DSNs say.
package rolepair

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// Start starts the pair and a Connector over it; the caller opens its pool on the Connector and
// closes it. readAfterWriteMillis=0 sends a read right after a write to the replica, so that
// the test sees the split. The pair runs on the in-memory backend even where lbdtest.EnvBackendDSN
// names a server: the programs make tables with the names an application would give them
// (customers, orders), which a shared database may hold already; ent and bun are proved on
// MariaDB by internal/clustertest's enttest and buntest, on tables of their own.
func Start(t *testing.T) (c *lbd.Connector, primary, replica *lbdtest.Proxy) {
	t.Helper()
	t.Setenv(lbdtest.EnvBackendDSN, "")
	cl := lbdtest.NewCluster(t, 2)
	primary, replica = cl.Proxy(0), cl.Proxy(1)
	replica.SetRole(lbdtest.Replica)
	c, err := lbd.NewConnector(fmt.Sprintf("%s:%s@lb(%s#primary,%s#replica)/%s?parseTime=true&balance=statement&readWriteSplit=true&readAfterWriteMillis=0",
		cl.User(), cl.Password(), primary.Addr(), replica.Addr(), cl.Database()))
	if err != nil {
		t.Fatal(err)
	}
	if ns, _ := c.Stats().Node(replica.Addr()); ns.Role != nodes.RoleReplica {
		t.Fatalf("the replica's role is %v", ns.Role)
	}
	return c, primary, replica
}

// Check fails t unless the primary ran a statement starting with write, the replica one
// starting with read, and the replica refused no write.
func Check(t testing.TB, primary, replica *lbdtest.Proxy, write, read string) {
	t.Helper()
	saw := func(p *lbdtest.Proxy, prefix string) bool {
		for _, q := range p.Queries() {
			if strings.HasPrefix(q, prefix) {
				return true
			}
		}
		return false
	}
	if replica.Refused() != 0 || !saw(primary, write) || !saw(replica, read) {
		t.Fatalf("primary ran %q; replica ran %q and refused %d writes", primary.Queries(), replica.Queries(), replica.Refused())
	}
}
