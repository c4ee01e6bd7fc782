package dnstest

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net"
	"strconv"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	_ "github.com/lbd-go/lbd/nodes/dns" // registers the lbdns DSN network
)

// The Connector takes its proxies from SRV records and follows them as they change.
func Example() {
	dnsServer, err := runDNS() // a DNS server for the example; leave dnsServer out to use the system's
	if err != nil {
		log.Fatal(err)
	}
	defer dnsServer.close()
	cluster, err := lbdtest.Start(3) // three MySQL-protocol proxies on loopback
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	records := make([]record, 3)
	for i, p := range cluster.Proxies() {
		_, port, _ := net.SplitHostPort(p.Addr())
		n, _ := strconv.Atoi(port)
		records[i] = record{target: "localhost", port: uint16(n), weight: 10}
	}
	dnsServer.setSRV("_mysql._tcp.proxies.example", records[0], records[1])

	// In production: "app:secret@lbdns(_mysql._tcp.proxies.example)/orders?dnsRefreshIntervalSeconds=10"
	dsn := fmt.Sprintf("%s:%s@lbdns(_mysql._tcp.proxies.example)/%s?dnsServer=%s&dnsRefreshIntervalSeconds=1",
		cluster.User(), cluster.Password(), cluster.Database(), dnsServer.addr)
	connector, err := lbd.NewConnector(dsn, lbd.WithCheckHealthInterval(50*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	// The source fetches its first list in the background; Ready (or the first statement) waits for it.
	if err := connector.Ready(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("nodes at start:", len(connector.Stats().Nodes))

	dnsServer.setSRV("_mysql._tcp.proxies.example", records...)
	third := net.JoinHostPort("localhost", strconv.Itoa(int(records[2].port)))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, ok := connector.Stats().Node(third); ok && n.State == lbd.StateUp {
			break
		}
	}
	n, _ := connector.Stats().Node(third)
	fmt.Println("third proxy after the change:", n.State)
	// Output:
	// nodes at start: 2
	// third proxy after the change: up
}
