package lbd

import (
	"errors"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// Stats lists each state change with what decided it, and counts them by cause per node.
func TestStatsRecordsTransitionsWithCause(t *testing.T) {
	srvs := startFakes(t, 2, mysqlfake.Config{})
	_, c := openFakeDB(t, srvs, "recoverCheckCount=2", quiet()...)
	tn := c.table.Nodes(nil)[0]
	now := time.Now()
	c.table.Probed(tn, now, errors.New("connection refused"), 0)
	for i := range 2 {
		c.table.Probed(tn, now.Add(time.Duration(i+1)*c.cfg.CheckHealthInterval), nil, 0)
	}
	st := c.Stats()
	if len(st.Recent) != 2 {
		t.Fatalf("Recent = %+v, want the markdown and the recovery", st.Recent)
	}
	down, up := st.Recent[0], st.Recent[1]
	if down.Node != tn.Addr() || down.From != StateUp || down.To != StateDown || down.Cause != CauseProbe ||
		down.Reason != "probe failed: connection refused" || down.At.IsZero() {
		t.Errorf("first transition %+v, want %s up to down by a probe, with its error", down, tn.Addr())
	}
	if up.To != StateUp || up.Cause != CauseProbe || up.Reason != "2 consecutive good probes" || up.At.Before(down.At) {
		t.Errorf("second transition %+v, want back up after 2 good probes, not before the markdown", up)
	}
	ns, _ := st.Node(tn.Addr())
	if ns.TransitionsBy[CauseProbe] != 2 || ns.Transitions != 2 {
		t.Errorf("node counts %v by cause (%d in all), want 2 by probe", ns.TransitionsBy, ns.Transitions)
	}
	if got := CauseNodeList.String(); got != "node_list" {
		t.Errorf("CauseNodeList prints %q", got)
	}
}
