package enttest

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// The relation paths of the generated client (a transaction creating a customer and its
// orders, WithOrders eager loading, Update and UpdateOneID, Create, writes through the
// client's QueryContext), in both balance modes and with the read/write split over lbdtest.
// ent's MySQL dialect learns an inserted id from the OK packet, never with RETURNING; INSERT
// and DELETE ... RETURNING go through QueryContext, on MariaDB (LBD_TEST_MYSQL_DSN). The same
// paths over the real MariaDB pair: TestEntOnThePair in clustertest.
func TestGraph(t *testing.T) { adaptertest.RunGraphScenarios(t, GraphAdapter{}) }
