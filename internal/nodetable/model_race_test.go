//go:build race

package nodetable

// modelRace says the race detector is on: the model checker then searches less deep in its
// long run (see modelDepth), which the race detector slows about sixfold.
const modelRace = true
