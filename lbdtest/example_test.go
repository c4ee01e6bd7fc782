package lbdtest_test

import (
	"database/sql"
	"fmt"
	"log"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/lbd-go/lbd/lbdtest"
)

func Example() {
	// Two proxies in front of one database.
	c, err := lbdtest.Start(2)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// c.DSN names every proxy for a client that registers the "lb"
	// network; any single proxy also answers plain tcp.
	fmt.Println(strings.Contains(c.DSN("timeout=1s"), "@lb("+c.Proxy(0).Addr()+","))

	db, err := sql.Open("mysql", fmt.Sprintf("%s:%s@tcp(%s)/%s",
		c.User(), c.Password(), c.Proxy(0).Addr(), c.Database()))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// The next statement through proxy 0 fails as if the server were
	// still starting; the one after it goes through.
	c.Proxy(0).FailNext(1, &mysql.MySQLError{
		Number:   8001,
		SQLState: [5]byte{'0', '8', '0', '0', '4'},
		Message:  "Server is initializing",
	})
	var v int
	fmt.Println(db.QueryRow("SELECT 1").Scan(&v))
	fmt.Println(db.QueryRow("SELECT 1").Scan(&v), v)
	fmt.Println(c.Proxy(0).Statements(), c.Proxy(1).Statements())

	// Output:
	// true
	// Error 8001 (08004): Server is initializing
	// <nil> 1
	// 2 0
}
