package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd"
)

// TestReportCarriesGroups: the document names each node's groups and the Connector's group
// settings, and the page shows them.
func TestReportCarriesGroups(t *testing.T) {
	at := time.Unix(1000, 0).UTC()
	st := lbd.Stats{
		Nodes:          []lbd.NodeStats{{Addr: "a:1", Groups: []string{"analytics", "reporting"}}, {Addr: "b:1"}},
		IsolatedGroups: []string{"analytics"},
	}
	b, err := json.Marshal(report(st, at, 0, DefaultPageSize))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"groups":["analytics","reporting"]`, `"groups":[]`, `"group":""`, `"isolated_groups":["analytics"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report %s lacks %s", b, want)
		}
	}
	for _, want := range []string{"n.groups", "r.isolated_groups", "r.group"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page does not show %s", want)
		}
	}
}
