package nodes_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// A source package registers its DSN network from init; a DSN such as
// user:pass@lbfixed(10.0.0.1:2883,10.0.0.2:2883)/db?fixedZone=az1 then selects it once the
// package is imported. The Connector calls New with the DSN's addresses and the parameters
// the factory lists; here the example calls it by hand, as the Connector would.
func ExampleRegister() {
	nodes.Register("lbfixed", nodes.SourceFactory{
		Params: []string{"fixedZone"},
		New: func(sc nodes.SourceConfig) (nodes.Source, error) {
			zone := sc.Params["fixedZone"]
			if zone == "" {
				return nil, fmt.Errorf("lbd: %s needs the fixedZone parameter, e.g. fixedZone=az1", sc.Network)
			}
			src := make(nodes.Static, len(sc.Addrs))
			for i, a := range sc.Addrs {
				src[i] = nodes.Node{Addr: a, AZ: zone}
			}
			return src, nil
		},
	})

	f, _ := nodes.Lookup("lbfixed")
	src, err := f.New(nodes.SourceConfig{
		Network: "lbfixed",
		Addrs:   []string{"10.0.0.1:2883", "10.0.0.2:2883"},
		Params:  map[string]string{"fixedZone": "az1"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Join(set.Addrs(), ","), set.Nodes[0].AZ)
	// Output: 10.0.0.1:2883,10.0.0.2:2883 az1
}
