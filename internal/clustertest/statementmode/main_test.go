// Package statementmode tests statement mode (balance=statement), where each statement or
// transaction borrows a physical connection for its length: it spreads the statements, gives
// connection mode's results, keeps sessions, prepared statements and ORMs' habits whole, and
// fails only what is in flight when a proxy fails.
package statementmode

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/clusterkit"
)

// TestMain fails the package when a goroutine outlives the tests, and runs up to
// clusterkit.Parallel of its parallel tests at once (clusterkit.Main says which may be).
func TestMain(m *testing.M) { clusterkit.Main(m) }
