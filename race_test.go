//go:build race

package lbd

const raceEnabled = true
