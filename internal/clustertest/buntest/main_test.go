// Package buntest runs bun, with its MySQL dialect, over lbd: the shared scenarios of
// adaptertest and the relation scenarios, in both balance modes and with the read/write split,
// on lbdtest and on the real MariaDB pair when it is set.
package buntest

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

func TestMain(m *testing.M) { adaptertest.Main(m) }
