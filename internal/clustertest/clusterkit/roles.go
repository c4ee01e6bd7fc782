package clusterkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/internal/testkit"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// WaitRoles waits, up to 10 s, until c's role checks have found its nodes' roles to be want, in
// the order Stats lists the nodes.
func WaitRoles(t testing.TB, c *lbd.Connector, want ...nodes.Role) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("the roles %v", want), func() bool {
		st := c.Stats()
		if len(st.Nodes) != len(want) {
			return false
		}
		for i, n := range st.Nodes {
			if n.Role != want[i] {
				return false
			}
		}
		return true
	})
}

// WaitForRoles waits, up to 5 s, until the role checks have given every proxy of cl the role
// want says for its index.
func WaitForRoles(t testing.TB, c *lbd.Connector, cl *lbdtest.Cluster, want func(i int) nodes.Role) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, "the role checks", func() bool {
		for i, p := range cl.Proxies() {
			if ns, _ := c.Stats().Node(p.Addr()); ns.Role != want(i) {
				return false
			}
		}
		return true
	})
}
