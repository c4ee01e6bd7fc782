package gormtest_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/gormplugin"
	"github.com/lbd-go/lbd/lbdtest"
)

// Book is the example's model.
type Book struct {
	ID    int64
	Title string
	Year  int
}

func Example() {
	// Three proxies in front of one database; in production the DSN names your proxies:
	// "user:pass@lb(10.0.0.1:2883,10.0.0.2:2883,10.0.0.3:2883)/app".
	cluster, err := lbdtest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	db, err := gormplugin.Open(cluster.DSN("parseTime=true"), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close() // closes the lbd connector too

	// A table of its own, since the example may run against a shared server.
	table := fmt.Sprintf("books_%d", rand.Uint32())
	if err := db.Exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY AUTO_INCREMENT, title VARCHAR(100), year INT)").Error; err != nil {
		log.Fatal(err)
	}
	defer db.Exec("DROP TABLE " + table)
	books := db.Table(table).Session(&gorm.Session{}) // safe to reuse for several statements

	if err := books.Create(&[]Book{{Title: "Dune", Year: 1965}, {Title: "Solaris", Year: 1961}}).Error; err != nil {
		log.Fatal(err)
	}
	if err := books.Where("title = ?", "Solaris").Update("year", 1972).Error; err != nil {
		log.Fatal(err)
	}
	if err := books.Where("year < ?", 1970).Delete(&Book{}).Error; err != nil {
		log.Fatal(err)
	}

	var left []Book
	if err := books.Order("id").Find(&left).Error; err != nil {
		log.Fatal(err)
	}
	for _, b := range left {
		fmt.Println(b.Title, b.Year)
	}
	// Output:
	// Solaris 1972
}

// With an existing Connector: GORM over Dialector, and the Plugin added by hand. A read that
// fails with an error fatal to its connection runs once more on a new connection (the
// Connector's retryReads, on by default), so GORM never sees it.
func ExampleDialector() {
	cluster, err := lbdtest.Start(1)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()

	c, err := lbd.NewConnector(cluster.DSN(""))
	if err != nil {
		log.Fatal(err)
	}
	db, err := gorm.Open(gormplugin.Dialector(c), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, _ := db.DB()
	defer sqlDB.Close()
	if err := db.Use(&gormplugin.Plugin{Connector: c}); err != nil {
		log.Fatal(err)
	}

	// The proxy answers the next statement like an OceanBase server that is still starting:
	// an error after which the connection must not be reused.
	cluster.Proxy(0).FailNext(1, &mysql.MySQLError{
		Number: 8001, SQLState: [5]byte{'0', '8', '0', '0', '4'}, Message: "Server is initializing",
	})
	var answer int
	err = db.Raw("SELECT 40 + 2").Scan(&answer).Error
	fmt.Println(answer, err)
	fmt.Println("retired connections:", c.Stats().Nodes[0].Retired)
	// Output:
	// 42 <nil>
	// retired connections: 1
}
