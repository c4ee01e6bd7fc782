package testkit

import (
	"os"
	"testing"
)

// LongEnv names the environment variable that turns on the long runs: soaks, the whole hostile
// matrix, fuzz seed corpora, the demo end to end. The README's test command leaves it unset so
// that it finishes in minutes; .ci/run runs the same packages again with LongEnv=1.
const LongEnv = "LBD_TEST_LONG"

// Long reports whether the long runs are on (LBD_TEST_LONG=1).
func Long() bool { return os.Getenv(LongEnv) == "1" }

// SkipUnlessLong skips t, saying how to run it, unless the long runs are on.
func SkipUnlessLong(t testing.TB) {
	t.Helper()
	if !Long() {
		t.Skipf("a long run: set %s=1 to run it (.ci/run does)", LongEnv)
	}
}
