package enttest

import (
	"testing"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

func TestMain(m *testing.M) { adaptertest.Main(m) }
