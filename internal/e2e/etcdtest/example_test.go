package etcdtest

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net"
	"net/url"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	_ "github.com/lbd-go/lbd/nodes/etcd" // registers the lbetcd DSN network
)

// The Connector takes its proxies from the etcd key that lb-driver's config-server writes, and
// follows the key as it changes.
func Example() {
	etcdAddr, put, stop := exampleEtcd() // an etcd for the example; use your cluster's endpoints
	defer stop()
	cluster, err := lbdtest.Start(3) // three MySQL-protocol proxies on loopback
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	p := cluster.Addrs()
	const key = "/lbd/schemas/im_user"
	put(key, fmt.Sprintf(`{"schema":"im_user","proxy":[%q,%q]}`, p[0], p[1]))

	// In production: "app:secret@lbetcd(etcd1:2379,etcd2:2379)/im_user?etcdKey=%2Flbd%2Fschemas%2Fim_user"
	dsn := fmt.Sprintf("%s:%s@lbetcd(%s)/%s?etcdKey=%s",
		cluster.User(), cluster.Password(), etcdAddr, cluster.Database(), url.QueryEscape(key))
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

	put(key, fmt.Sprintf(`{"schema":"im_user","proxy":[%q,%q,%q]}`, p[0], p[1], p[2]))
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, ok := connector.Stats().Node(p[2]); ok && n.State == lbd.StateUp {
			break
		}
	}
	n, _ := connector.Stats().Node(p[2])
	fmt.Println("third proxy after the write:", n.State)
	// Output:
	// nodes at start: 2
	// third proxy after the write: up
}

// exampleEtcd runs an etcd for the example and returns its address, a way to write a key and
// a function that stops it.
func exampleEtcd() (addr string, put func(key, value string), stop func()) {
	dir, err := os.MkdirTemp("", "lbd-etcd-example")
	if err != nil {
		log.Fatal(err)
	}
	client := url.URL{Scheme: "http", Host: exampleFreeAddr()}
	e, err := launch(dir, client, url.URL{Scheme: "http", Host: exampleFreeAddr()})
	if err != nil {
		os.RemoveAll(dir)
		log.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{client.Host}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		log.Fatal(err)
	}
	put = func(key, value string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := cli.Put(ctx, key, value); err != nil {
			log.Fatal(err)
		}
	}
	return client.Host, put, func() {
		cli.Close()
		e.Close()
		os.RemoveAll(dir)
	}
}

func exampleFreeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
