package nodetable

import (
	"errors"
	"testing"
)

var errShutdown = errors.New("Error 1053 (08S01): Server shutdown in progress")

// TestShutdownDrainsAtOnce: one announcement takes an up node down with CauseShutdown, picks
// and panic mode leave it alone, and probes bring it back once the server answers again.
func TestShutdownDrainsAtOnce(t *testing.T) {
	h := started(t, "a:1", "b:1")
	a := h.node("a:1")
	h.tab.Shutdown(a, errShutdown)
	if h.state("a:1") != Down {
		t.Fatalf("a:1 is %v after announcing its shutdown, want down", h.state("a:1"))
	}
	h.wantTransitions("a:1 up>down")
	if v, _ := h.view("a:1"); v.TransitionsBy[CauseShutdown] != 1 || v.LastErr != errShutdown {
		t.Fatalf("a:1's transitions by cause %v, last error %v; want one by shutdown, the announcement", v.TransitionsBy, v.LastErr)
	}
	if got := h.picks(4); got[0] != "b:1" || got[1] != "b:1" || got[2] != "b:1" || got[3] != "b:1" {
		t.Fatalf("picks %v, want b:1 only", got)
	}
	// No other node up: panic mode tries b:1, never the node that said it stops.
	h.downByProbe("b:1")
	h.took()
	if got := h.panicPick(); got != "b:1" {
		t.Fatalf("panic pick = %s, want b:1 (a:1 announced its shutdown)", got)
	}
	if got := h.panicPick(); got != "-" {
		t.Fatalf("second panic pick = %s, want none", got)
	}
	// A second announcement of a node already down changes nothing.
	h.tab.Shutdown(a, errShutdown)
	h.wantTransitions()
	// Restarted: two spaced good probes bring it up, and panic mode may try it again later.
	h.tab.Probed(a, h.tick(), nil, 0)
	h.tab.Probed(a, h.tick(), nil, 0)
	if h.state("a:1") != Up {
		t.Fatalf("a:1 is %v after two good probes, want up", h.state("a:1"))
	}
	h.downByProbe("a:1")
	h.now = h.now.Add(panicSpacing)
	if got := h.panicPick(); got != "a:1" {
		t.Fatalf("panic pick after a:1 came back and failed a probe = %s, want a:1", got)
	}
}
