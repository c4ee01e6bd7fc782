package sqlxtest

import (
	"io"
	"log"
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Broken connections are the point of several tests; keep go-sql-driver from printing
	// about each one. No goroutine is exempt from the leak check: every cluster, connector and
	// DB a test opens is closed before it ends.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	goleak.VerifyTestMain(m)
}
