package dnstest

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/dns"
)

// TestNamesCarryGroups: a name written "name+group" gives its groups to every node it resolves
// to, before any zone; a node two names give belongs to the groups of both. DNS records carry
// no group of their own.
func TestNamesCarryGroups(t *testing.T) {
	res := fakeResolver{
		ips: map[string][]net.IPAddr{"oltp.test": {{IP: net.ParseIP("10.0.0.1")}, {IP: net.ParseIP("10.0.0.2")}}},
		srv: map[string][]*net.SRV{
			"_mysql._tcp.bi.test":  {{Target: "10.0.0.2.", Port: 2883, Weight: 2}, {Target: "p3.test.", Port: 2883}},
			"_mysql._tcp.rep.test": {{Target: "p3.test.", Port: 2883, Weight: 5}},
		},
	}
	src, err := dns.New(dns.Config{Names: []string{"oltp.test:2883", "_mysql._tcp.bi.test+analytics~az2", "_mysql._tcp.rep.test+reporting+bi"},
		Resolver: res, Logger: (&logs{}).Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"10.0.0.1:2883": "*1 ",
		"10.0.0.2:2883": "*2 analytics", // from both names: the larger weight, and bi's group
		"p3.test:2883":  "*5 analytics+bi+reporting",
	}
	if len(set.Nodes) != len(want) {
		t.Fatalf("nodes %v, want %v", set.Nodes, want)
	}
	for _, n := range set.Nodes {
		w := max(n.Weight, 1)
		if got := "*" + string(rune('0'+w)) + " " + n.Groups; got != want[n.Addr] {
			t.Errorf("%s: %q, want %q", n.Addr, got, want[n.Addr])
		}
	}
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	// The version follows the groups: the same addresses in other groups are another set.
	other, err := dns.New(dns.Config{Names: []string{"oltp.test:2883", "_mysql._tcp.bi.test", "_mysql._tcp.rep.test"}, Resolver: res, Logger: (&logs{}).Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if set2, err := other.Start(context.Background(), func(nodes.Set) {}); err != nil || set2.Version == set.Version {
		t.Errorf("versions %q and %q (%v): want them to differ with the groups", set.Version, set2.Version, err)
	}
	for name, want := range map[string]string{
		"a.test:2883+BI":        `has bad groups after '+': group "BI" has an upper-case letter`,
		"a.test:2883+":          `has bad groups after '+': group "" must be 1 to 32 characters`,
		"_mysql._tcp.x+a+a~az1": `group "a" is given twice`,
	} {
		if _, err := dns.New(dns.Config{Names: []string{name}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: New = %v, want an error containing %q", name, err, want)
		}
	}
}
