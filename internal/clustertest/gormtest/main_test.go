package gormtest

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/lbd-go/lbd/internal/clustertest/adaptertest"
)

func TestMain(m *testing.M) {
	// Every cluster, connector and *sql.DB a test opens is closed before it ends. The one
	// goroutine let through belongs to GORM itself: with PrepareStmt, GORM's statement cache
	// starts an expiry loop that it never stops (gorm.io/gorm/internal/lru says so next to
	// the go statement); it does not come from lbd or this package.
	adaptertest.Main(m, goleak.IgnoreTopFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"))
}
