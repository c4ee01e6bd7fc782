package buntest

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// The relation paths of bun (RunInTx creating a customer and its orders, Relation eager
// loading, updates, inserts, writes through NewRaw's Scan, which is QueryContext), in both
// balance modes and with the read/write split over lbdtest. On MariaDB 10.5 and newer
// (LBD_TEST_MYSQL_DSN) bun's own inserts send INSERT ... RETURNING through QueryContext, and
// its delete takes a RETURNING clause. The same paths over the real MariaDB pair:
// TestBunOnThePair in clustertest.
func TestGraph(t *testing.T) { adaptertest.RunGraphScenarios(t, GraphAdapter{}) }
