package nodetable

// Past bugs of lbd, each brought back by one switch so that the model checker's tests
// (model_test.go, TestModelCatchesPastBugs) can show its invariants catch them. Every switch is
// false outside those tests, and nothing else sets one; reading it costs one load of a package
// variable on the path it guards.
var (
	// bugUnspacedRecovery counts every good probe toward recovery however soon after the one
	// before, as lbd did before recovery counted only probes spaced half a probe interval apart:
	// the two early probes a fatal-error markdown asks for, answered a millisecond apart, passed
	// for recoverCheckCount=2 and brought the node back at once.
	bugUnspacedRecovery bool
	// bugCheckoutIgnoresState makes UpSince true whatever the node's state, as lbd's checkout
	// was before it asked the table: it relied on the handler of the down transition to close
	// the node's idle connections, and handed them out until the handler ran.
	bugCheckoutIgnoresState bool
	// bugCheckoutIgnoresEpoch makes UpSince answer as IsUp, as the checkout did before it
	// compared epochs: once its node was up again, a connection opened before the markdown was
	// handed out if the markdown's handler had not run yet.
	bugCheckoutIgnoresEpoch bool
	// bugRemovalCountsUpNotActive counts a listed node that is up but takes no connections (a
	// standby role, a lagging replica) as a reason to let a removal through, as SetNodes did
	// before it counted the pick indexes: the removal could leave no node to pick.
	bugRemovalCountsUpNotActive bool
	// bugSeqlessTransitions gives every state change a Seq above every epoch, so that its
	// handler retires all of the node's connections, as lbd did before transitions carried a
	// Seq: a down transition handled after its node came back up retired the connections
	// opened since, and one checked out meanwhile failed with a bad connection.
	bugSeqlessTransitions bool
)
