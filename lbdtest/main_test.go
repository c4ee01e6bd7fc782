package lbdtest

import (
	"io"
	"log"
	"testing"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Broken connections are the point of several tests; keep the driver
	// from printing about each one.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	goleak.VerifyTestMain(m)
}
