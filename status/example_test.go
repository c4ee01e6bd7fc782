package status_test

import (
	"database/sql"
	"log"
	"net/http"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/status"
)

// requireAdmin stands for the application's own authentication.
func requireAdmin(h http.Handler) http.Handler { return h }

// The status page mounted on the application's mux, behind its own authentication, as
// net/http/pprof would be.
func ExampleNew() {
	connector, err := lbd.NewConnector("app:secret@lb(127.0.0.1:2883,127.0.0.1:2884)/orders")
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()

	page, err := status.New(connector, status.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer page.Close()
	mux := http.NewServeMux()
	mux.Handle("/debug/lbd/", requireAdmin(page))
	// http.ListenAndServe("127.0.0.1:6060", mux)
}
