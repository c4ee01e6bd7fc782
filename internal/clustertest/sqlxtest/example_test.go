package sqlxtest_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/jmoiron/sqlx"

	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/sqlxadapter"
)

// Book is the example's row type.
type Book struct {
	ID    int64  `db:"id"`
	Title string `db:"title"`
	Year  int    `db:"year"`
}

func Example() {
	// Three proxies in front of one database; in production the DSN names your proxies:
	// "user:pass@lb(10.0.0.1:2883,10.0.0.2:2883,10.0.0.3:2883)/app".
	cluster, err := lbdtest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	db, err := sqlxadapter.Open(cluster.DSN("parseTime=true"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close() // closes the lbd connector too

	// A table of its own, since the example may run against a shared server.
	table := fmt.Sprintf("books_%d", rand.Uint32())
	if _, err := db.Exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, title VARCHAR(100), year INT)"); err != nil {
		log.Fatal(err)
	}
	defer db.Exec("DROP TABLE " + table)

	for _, b := range []Book{{Title: "Dune", Year: 1965}, {Title: "Solaris", Year: 1961}, {Title: "Ubik", Year: 1969}} {
		if _, err := db.NamedExec("INSERT INTO "+table+" (title, year) VALUES (:title, :year)", b); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := db.Exec("UPDATE "+table+" SET year = ? WHERE title = ?", 1972, "Solaris"); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec("DELETE FROM "+table+" WHERE year < ?", 1966); err != nil {
		log.Fatal(err)
	}

	query, args, err := sqlx.In("SELECT * FROM "+table+" WHERE title IN (?) ORDER BY id", []string{"Dune", "Solaris", "Ubik"})
	if err != nil {
		log.Fatal(err)
	}
	var left []Book
	if err := db.Select(&left, db.Rebind(query), args...); err != nil {
		log.Fatal(err)
	}
	for _, b := range left {
		fmt.Println(b.Title, b.Year)
	}
	// Output:
	// Solaris 1972
	// Ubik 1969
}
