package routing

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
	"github.com/lbd-go/lbd/internal/clustertest/buntest"
	"github.com/lbd-go/lbd/internal/clustertest/enttest"
)

// ent's generated client and bun with the read/write split over the real MariaDB pair, reads
// consistent by GTID: INSERT and DELETE ... RETURNING and every other write, bun's own inserts
// (RETURNING on MariaDB) and the writes sent through QueryContext included, run on the primary
// and their rows are there; the eager loads run on the replica. They run here, with the other
// pair tests, one at a time: a switchover or a delayed replica from another test would
// disturb them.
func TestEntOnThePair(t *testing.T) { adaptertest.RunGraphOnPair(t, enttest.GraphAdapter{}) }

func TestBunOnThePair(t *testing.T) { adaptertest.RunGraphOnPair(t, buntest.GraphAdapter{}) }
