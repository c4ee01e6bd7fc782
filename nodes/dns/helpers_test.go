package dns_test

import (
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/internal/testkit"
)

// TestMain fails the run when any goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sourceGoroutines counts goroutines running this package's code, right now: Close must have
// waited for all of them.
func sourceGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/lbd-go/lbd/nodes/dns.") {
			count++
		}
	}
	return count
}

// Shared helpers, under the names these tests use.
type (
	logs    = testkit.Logs
	updates = testkit.Updates
)

var waitFor = testkit.WaitFor
