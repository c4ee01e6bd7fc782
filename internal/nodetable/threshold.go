package nodetable

// The panic threshold (Envoy's panic_threshold, default 50%): when fewer than
// Config.PanicThreshold percent of the nodes are up, the health verdict is not trusted to
// concentrate the load. A fleet where most probes fail at once is more often a fault of the
// probes (a timeout too short for a slow moment, a check the proxies answer wrongly) than of
// most proxies, and piling every connection onto the few nodes still up can overload them and
// take them down too. Below the threshold, the down nodes that may be tried join the up ones in
// the pick indexes, so new connections and statement-mode checkouts spread over all of them by
// least connections, as Envoy balances over every host in panic.
//
//   - The share is of the nodes up and taking connections (in the pick indexes) among those and
//     the down nodes that may be tried: not standby, not announced shutdown (Shutdown), of a
//     role the target accepts. Draining nodes count in neither.
//   - It begins only while some node is up, and lasts while none is once it has begun (the
//     down nodes serving then are the fleet's capacity). A fleet that was not below the
//     threshold when its last node went down gets panic mode's spaced single dials (PanicPick)
//     as before, and so does a node no dial reaches: a dead fleet is not dialed on every
//     Connect.
//   - A down node whose dial fails leaves the indexes until its next probe result, so a dead
//     node among them costs about one failed dial (then the next node) per probe, not one per
//     Connect.
//   - Its state stays down, and its probes go on: enough good probes bring it up as always, and
//     once the share is back at the threshold the down nodes leave the indexes; their
//     connections are then refused at checkout (UpSince) and dropped.
//
// PanicThreshold 0 turns it off; 100 spreads as soon as any node is down.

// panicEligibleLocked reports whether down node n may serve in panic: not standby, not
// announced shutdown, of a role the target accepts, and its latest dial did not fail.
func (t *Table[P]) panicEligibleLocked(n *Node[P]) bool {
	accepted := t.tiers[0] | t.tiers[1]
	return n.state == Down && !n.standby && !n.shutdown && accepted.Has(n.role)
}

// updatePanicLocked works out whether the table is below the panic threshold and puts the
// eligible down nodes into the pick indexes, or takes them out. O(number of down nodes).
func (t *Table[P]) updatePanicLocked() {
	want := false
	if t.cfg.PanicThreshold > 0 && (t.active > 0 || t.panicking) {
		eligible := 0
		for _, n := range t.downs {
			if t.panicEligibleLocked(n) {
				eligible++
			}
		}
		want = t.active*100 < t.cfg.PanicThreshold*(t.active+eligible)
	}
	t.panicking = want
	for _, n := range t.downs {
		if want && t.panicEligibleLocked(n) && !n.panicFailed {
			t.panicIndexLocked(n)
		} else {
			t.panicUnindexLocked(n)
		}
	}
}

// panicIndexLocked puts down node n into the pick indexes as a node served in panic.
func (t *Table[P]) panicIndexLocked(n *Node[P]) {
	if n.panicIn {
		return
	}
	n.panicIn = true
	n.panicServing.Store(true)
	if !n.byOpen.Indexed() {
		t.byOpen[n.slot()].Insert(&n.byOpen)
	}
	if !n.byInUse.Indexed() {
		t.byInUse[n.slot()].Insert(&n.byInUse)
	}
}

// panicUnindexLocked takes n out of the pick indexes when it was there as a node served in
// panic.
func (t *Table[P]) panicUnindexLocked(n *Node[P]) {
	if !n.panicIn {
		return
	}
	n.panicIn = false
	n.panicServing.Store(false)
	if n.byOpen.Indexed() {
		t.byOpen[n.slot()].Remove(&n.byOpen)
	}
	if n.byInUse.Indexed() {
		t.byInUse[n.slot()].Remove(&n.byInUse)
	}
}

// Panicking reports whether fewer than Config.PanicThreshold percent of the nodes are up, so
// that down nodes serve as well (see above).
func (t *Table[P]) Panicking() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.panicking
}

// InRotation reports whether n takes new connections and checkouts now, with one atomic load
// and no mutex: it is up, or down but served because the table is below the panic threshold.
func (t *Table[P]) InRotation(n *Node[P]) bool {
	return State(n.stateNow.Load()) == Up || n.panicServing.Load()
}
