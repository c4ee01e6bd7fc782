// examples/readme/gorm/main.go: GORM through the lbd plugin.
package main

import (
	"fmt"
	"log"

	"gorm.io/gorm"

	"github.com/lbd-go/lbd/gormplugin"
)

type Order struct {
	ID    int64
	Total int
}

func main() {
	// Open builds the Connector, opens GORM on it and completes the plugin with it (the plugin
	// names the proxy in GORM's logs). A read a broken proxy failed runs once more on another
	// (the Connector's retryReads, on by default; never a write, never inside a transaction).
	plugin := &gormplugin.Plugin{}
	db, err := gormplugin.Open("app:secret@lb(10.0.0.1:2883,10.0.0.2:2883)/orders?parseTime=true",
		&gorm.Config{Plugins: map[string]gorm.Plugin{gormplugin.Name: plugin}})
	if err != nil {
		log.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer sqlDB.Close()

	var orders []Order
	if err := db.Where("total > ?", 10).Find(&orders).Error; err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(orders), "orders; proxies:", len(plugin.Connector.Stats().Nodes))
}
