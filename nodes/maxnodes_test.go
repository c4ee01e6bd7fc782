package nodes

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// fleet returns n distinct addresses.
func fleet(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.%d:2883", i>>16, i>>8&255, i&255)
	}
	return out
}

// TestMaxNodes: a set or a document of MaxNodes nodes is valid; one more is refused with an
// error wrapping ErrTooManyNodes that says the bound and what to do.
func TestMaxNodes(t *testing.T) {
	if err := (Set{Nodes: StaticAddrs(fleet(MaxNodes)...)}).Validate(); err != nil {
		t.Fatalf("set of MaxNodes nodes: %v", err)
	}
	checkTooMany := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrTooManyNodes) {
			t.Fatalf("%s of MaxNodes+1 nodes: %v, want an error wrapping ErrTooManyNodes", what, err)
		}
		for _, want := range []string{"50001", "50000", "nodes.MaxNodes", "split"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", what, err, want)
			}
		}
	}
	long := fleet(MaxNodes + 1)
	checkTooMany("set", Set{Nodes: StaticAddrs(long...)}.Validate())
	checkTooMany("CheckCount", CheckCount(len(long)))
	d := &Document{Schema: "s", Proxy: long}
	checkTooMany("document", d.Validate("s"))
	d = &Document{Schema: "s", Proxy: fleet(3), AZProxy: map[string][]string{"az1": long}}
	checkTooMany("document's AZ set", d.Validate("s"))
}
