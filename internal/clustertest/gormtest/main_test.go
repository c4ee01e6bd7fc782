package gormtest

import (
	"io"
	"log"
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Broken connections are the point of several tests; keep go-sql-driver from printing
	// about each one.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	// Every cluster, connector and *sql.DB a test opens is closed before it ends. The one
	// goroutine let through belongs to GORM itself: with PrepareStmt, GORM's statement cache
	// starts an expiry loop that it never stops (gorm.io/gorm/internal/lru says so next to
	// the go statement); it does not come from lbd or this package.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1"))
}
