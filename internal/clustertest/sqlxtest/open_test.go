package sqlxtest

import (
	"context"
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/sqlxadapter"
)

// Open gives "?" bind variables, and closing the DB closes the connector.
func TestOpenAndClose(t *testing.T) {
	cl := lbdtest.NewCluster(t, 3)
	c, err := lbd.NewConnector(cl.DSN(""), quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	db := sqlxadapter.NewDb(c)
	if db.DriverName() != "mysql" || sqlx.BindType(db.DriverName()) != sqlx.QUESTION || db.Rebind("a = ? AND b = ?") != "a = ? AND b = ?" {
		t.Fatalf("driver %q: bind variables are not ?", db.DriverName())
	}
	var one int
	if err := db.Get(&one, "SELECT 1"); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connect(context.Background()); !errors.Is(err, lbd.ErrClosed) {
		t.Fatalf("Connect after DB.Close: %v, want lbd.ErrClosed", err)
	}

	db, err = sqlxadapter.Open(cl.DSN(""), quiet()...)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Get(&one, "SELECT 2"); err != nil || one != 2 {
		t.Fatalf("SELECT 2 = %d, %v", one, err)
	}
	if _, err := sqlxadapter.Open("root:@tcp(127.0.0.1:1)/test"); err == nil {
		t.Error("Open accepted a DSN without the lb network")
	}
}
