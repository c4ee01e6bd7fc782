package lbd

import (
	"sync"
	"testing"

	"github.com/lbd-go/lbd/nodes"
)

func TestTLSChecksEachNodesOwnName(t *testing.T) {
	cfg, err := ParseDSN("u:p@lb(a.example:1,b.example:2,[fd00::3]:3)/db?tls=true")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConnectorFromConfig(cfg, append(quiet(), WithLogger(discardLogger()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for addr, want := range map[string]string{"a.example:1": "a.example", "b.example:2": "b.example", "[fd00::3]:3": "fd00::3"} {
		my := c.nodeConfig(addr)
		if my.TLS == nil || my.TLS.ServerName != want {
			t.Errorf("node %s: TLS server name %q, want %q", addr, my.TLS.ServerName, want)
		}
	}
	if name := fixedTLSName(cfg); name != "" {
		t.Errorf("fixedTLSName = %q for a list, want none", name)
	}
	one, _ := ParseDSN("u:p@lb(a.example:1)/db?tls=true")
	if name := fixedTLSName(one); name != "" {
		t.Errorf("fixedTLSName = %q for a name derived from the only node, want none", name)
	}
	registerTestSources.Do(registerTLSTestSource)
	viaSource, err := ParseDSN("u:p@lbtlssrc(configserver.example:8080)/db?tls=true")
	if err != nil {
		t.Fatal(err)
	}
	if name := fixedTLSName(viaSource); name != "" {
		t.Errorf("fixedTLSName = %q, derived from the source's one address; want none", name)
	}
}

var registerTestSources sync.Once

func registerTLSTestSource() {
	nodes.Register("lbtlssrc", nodes.SourceFactory{New: func(nodes.SourceConfig) (nodes.Source, error) {
		return nodes.StaticAddrs("proxy-a.example:2883"), nil
	}})
}
