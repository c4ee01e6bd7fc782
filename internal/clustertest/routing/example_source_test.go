package routing_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/lbd-go/lbd"
	"github.com/lbd-go/lbd/lbdtest"
	"github.com/lbd-go/lbd/nodes"
)

// fileLikeSource is a user's own node source: here the list lives in memory and changes when
// the application calls Set; a real one might watch a file or a service registry.
type fileLikeSource struct {
	mu     sync.Mutex
	list   []string
	update func(nodes.Set)
}

func (s *fileLikeSource) Start(_ context.Context, update func(nodes.Set)) (nodes.Set, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.update = update
	return nodes.Set{Nodes: nodes.StaticAddrs(s.list...)}, nil
}

func (s *fileLikeSource) Set(list ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = list
	s.update(nodes.Set{Nodes: nodes.StaticAddrs(list...)})
}

func (s *fileLikeSource) Close() error { return nil }

// A custom nodes.Source decides which proxies the Connector uses; the DSN names none.
func ExampleWithSource() {
	cluster, err := lbdtest.Start(3)
	if err != nil {
		log.Fatal(err)
	}
	defer cluster.Close()
	addrs := cluster.Addrs()

	src := &fileLikeSource{list: addrs[:2]}
	dsn := strings.Replace(cluster.DSN(""), strings.Join(addrs, ","), "", 1) // user:pass@lb()/test
	connector, err := lbd.NewConnector(dsn, lbd.WithSource(src), lbd.WithCheckHealthInterval(50*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	// The source starts in the background; Connect waits for its first list, and so does Ready.
	if err := connector.Ready(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println("nodes at start:", len(connector.Stats().Nodes))

	src.Set(addrs...) // the third proxy joins after one good probe
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, ok := connector.Stats().Node(addrs[2]); ok && n.State == lbd.StateUp {
			break
		}
	}
	n, _ := connector.Stats().Node(addrs[2])
	fmt.Println("third proxy:", n.State)
	// Output:
	// nodes at start: 2
	// third proxy: up
}
