package testkit

import (
	"os"
	"testing"
	"time"
)

// SoakEnv names the environment variable that lengthens soak tests: a Go duration such as
// "30s" or "5m".
const SoakEnv = "LBD_TEST_SOAK"

// Soak returns how long a soak test keeps its load running once the events it needs have
// happened: 0 by default, so that a plain `go test` ends as soon as the test has seen enough,
// or the duration in LBD_TEST_SOAK for a longer run that gives rare interleavings more
// chances. A value that does not parse, or a negative one, fails the test: a soak asked for
// must not silently shrink to nothing.
func Soak(t testing.TB) time.Duration {
	t.Helper()
	v := os.Getenv(SoakEnv)
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		t.Fatalf("%s=%q: want a non-negative Go duration such as 30s", SoakEnv, v)
	}
	return d
}

// SoakWait blocks for Soak(t), or returns at once when no soak was asked for. The wait is the
// soak itself (more time under load), never what decides the test.
func SoakWait(t testing.TB) {
	t.Helper()
	if d := Soak(t); d > 0 {
		t.Logf("soaking for %v (%s)", d, SoakEnv)
		time.Sleep(d)
	}
}
