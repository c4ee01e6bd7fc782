package sqlxtest

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

// No goroutine is exempt from the leak check.
func TestMain(m *testing.M) { adaptertest.Main(m) }
