package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/nodes"
	_ "github.com/lbd-go/lbd/nodes/etcd"   // registers lbetcd and its parameters
	_ "github.com/lbd-go/lbd/nodes/remote" // registers lbremote and its parameters
)

// The reference (docs/reference.md) has an entry for every parameter of the node sources that
// live in modules of their own; the root package's test covers lbd's parameters and lbdns.
func TestReferenceCoversTheSources(t *testing.T) {
	b, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, network := range []string{"lbremote", "lbetcd"} {
		f, ok := nodes.Lookup(network)
		if !ok || len(f.Params) == 0 {
			t.Fatalf("%s is not registered with its parameters", network)
		}
		for _, name := range f.Params {
			if !strings.Contains(string(b), "\n### `"+name+"`\n") {
				t.Errorf("docs/reference.md has no entry (### `%s`) for %s's parameter %s", name, network, name)
			}
		}
	}
}
