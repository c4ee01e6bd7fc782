//go:build !race

package nodetable

// modelRace says the race detector is on (see model_race_test.go).
const modelRace = false
