package logical

import (
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/physical"
)

// The catch-up rules, step by step on one node: its first read checks it while the others go to
// the primary; a check that finds the write sets the catch-up time to the write's age; a read
// of an older write waits at most twice that, of a younger one goes to the primary but for one
// check a causalHold; a miss doubles the catch-up time; a timeout holds the node's waits; a
// wait that blocked sets the catch-up time to what the replica took.
func TestCatchUpRules(t *testing.T) {
	const window = 300 * time.Millisecond
	const rtt = 200 * time.Microsecond
	var rep physical.Replication
	now := time.Unix(1000, 0)
	ms := time.Millisecond
	type want struct {
		wait, check bool
		limit       time.Duration
	}
	step := func(name string, age time.Duration, w want) {
		t.Helper()
		wait, check, limit := plan(&rep, now, age, window, false)
		if wait != w.wait || check != w.check || (wait && limit != w.limit) {
			t.Fatalf("%s: plan = wait %v, check %v, limit %v; want %+v (catch-up %v)", name, wait, check, limit, w, time.Duration(rep.CatchUp.Load()))
		}
	}
	catchUp := func(name string, want time.Duration) {
		t.Helper()
		if got := time.Duration(rep.CatchUp.Load()); got != want {
			t.Fatalf("%s: catch-up %v, want %v", name, got, want)
		}
	}

	step("the first read", 500*time.Microsecond, want{true, true, causalCheck})
	step("a read while the first check is under way", ms, want{false, false, 0})
	missed(&rep, now, ms, 500*time.Microsecond, window, true)
	catchUp("after the first check missed", 1500*time.Microsecond)
	if rep.HeldUntil.Load() != 0 {
		t.Fatal("a check that missed held the node's waits")
	}

	step("a younger write", ms, want{false, false, 0}) // its check is due a causalHold later
	step("an older write", 2*ms, want{true, false, 3 * ms})
	reachedAfter(&rep, now, 3*ms, 2*ms, rtt, window, false) // it blocked: the replica took 2+3-0.2 ms
	catchUp("after a wait that blocked", 4800*time.Microsecond)
	reachedAfter(&rep, now, rtt, 10*ms, rtt, window, false) // at once: an eighth less
	catchUp("after a wait answered at once", 4200*time.Microsecond)

	step("a younger write before the next check is due", ms, want{false, false, 0})
	now = now.Add(causalHold)
	step("a younger write once a check is due", ms, want{true, true, causalCheck})
	step("another younger write right after", ms, want{false, false, 0})
	reachedAfter(&rep, now, rtt, ms, rtt, window, true)
	catchUp("after a check found a 1 ms old write", ms)

	step("an older write", 5*ms, want{true, false, 2 * ms})
	missed(&rep, now, 2*ms, 5*ms, window, false) // timed out
	catchUp("after a timeout", 7*ms)
	if rep.HeldUntil.Load() == 0 {
		t.Fatal("a timeout did not hold the node's waits")
	}
	step("an old write while held", time.Second, want{false, false, 0})
	now = now.Add(causalHold)
	step("the first read after the hold", time.Second, want{true, true, causalCheck})
	step("the next read after the hold", time.Second, want{false, false, 0})
	reachedAfter(&rep, now, rtt, time.Second, rtt, window, true)
	if rep.HeldUntil.Load() != 0 {
		t.Fatal("a wait that reached its position left the node held")
	}
	step("an old write once the replica is back", time.Second, want{true, false, 14 * ms})

	for range 20 {
		missed(&rep, now, window, time.Second, window, false)
	}
	catchUp("after many timeouts", window)
	if wait, _, _ := plan(&rep, now.Add(time.Hour), time.Second, window, true); wait {
		t.Fatal("an overflowed position was waited for")
	}
}

// A first check that got no answer taught nothing: the next read checks again, rather than the
// node's reads going to the primary for good.
func TestUnansweredFirstCheck(t *testing.T) {
	var rep physical.Replication
	now := time.Unix(1000, 0)
	if wait, check, _ := plan(&rep, now, time.Millisecond, time.Second, false); !wait || !check {
		t.Fatal("the first read does not check")
	}
	unanswered(&rep)
	if wait, check, _ := plan(&rep, now, time.Millisecond, time.Second, false); !wait || !check {
		t.Fatal("after an unanswered first check, the next read does not check")
	}
}
