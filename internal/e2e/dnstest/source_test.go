package dnstest

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/dns"
)

const refresh = 20 * time.Millisecond

// newSource builds a source asking srv about names, with a fast refresh, logging into l.
func newSource(t testing.TB, srv *dnsServer, l *logs, names ...string) *dns.Source {
	t.Helper()
	src, err := dns.New(dns.Config{
		Names:           names,
		Server:          srv.addr,
		Timeout:         time.Second,
		RefreshInterval: refresh,
		Logger:          l.Logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// rounds waits until srv has answered n more queries, so that the source has looked again.
func rounds(t testing.TB, srv *dnsServer, n int64) {
	t.Helper()
	from := srv.queries.Load()
	waitFor(t, 5*time.Second, "more lookups", func() bool { return srv.queries.Load() >= from+n })
}

func TestARecords(t *testing.T) {
	srv := startDNS(t)
	srv.setIPs("proxies.test", "127.0.0.2", "::1", "127.0.0.1")
	l := &logs{}
	src := newSource(t, srv, l, "proxies.test:2883")
	var got updates
	set, err := src.Start(context.Background(), got.Push)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1:2883", "127.0.0.2:2883", "[::1]:2883"}; !slices.Equal(set.Addrs(), want) {
		t.Fatalf("Start = %v, want %v", set.Addrs(), want)
	}
	if err := set.Validate(); err != nil || set.Version == "" {
		t.Fatalf("Start's set: %v, version %q", err, set.Version)
	}
	first := set.Version

	srv.setIPs("proxies.test", "::1", "127.0.0.1", "127.0.0.2") // the same answer in another order
	rounds(t, srv, 6)
	if got.Len() != 0 {
		t.Fatalf("an unchanged answer was passed on: %v", got.Last().Addrs())
	}

	srv.setIPs("proxies.test", "127.0.0.1", "127.0.0.3")
	waitFor(t, 5*time.Second, "the changed answer", func() bool { return got.Len() == 1 })
	if s := got.Last(); !slices.Equal(s.Addrs(), []string{"127.0.0.1:2883", "127.0.0.3:2883"}) || s.Version == first {
		t.Fatalf("update %v version %q", s.Addrs(), s.Version)
	}

	srv.setIPs("proxies.test", "127.0.0.2", "::1", "127.0.0.1")
	waitFor(t, 5*time.Second, "the first answer again", func() bool { return got.Len() == 2 })
	if v := got.Last().Version; v != first {
		t.Fatalf("the first answer came back with version %q, had %q", v, first)
	}
	if n := sourceGoroutines(); n == 0 {
		t.Fatal("no goroutine of the source found while it runs")
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if n := sourceGoroutines(); n != 0 {
		t.Fatalf("%d goroutines of the source outlive Close", n)
	}
	if err := src.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := src.Start(context.Background(), got.Push); !errors.Is(err, dns.ErrClosed) {
		t.Fatalf("Start after Close = %v, want ErrClosed", err)
	}
	if len(l.Find("lbd: DNS")) != 0 {
		t.Fatalf("unexpected log lines:\n%s", l.All())
	}
}

func TestSRVRecords(t *testing.T) {
	srv := startDNS(t)
	srv.setSRV("_mysql._tcp.proxies.test", record{"db1.example", 3306, 10}, record{"localhost", 2883, 20}, record{"localhost", 2884, 0})
	src := newSource(t, srv, &logs{}, "_mysql._tcp.proxies.test")
	var got updates
	set, err := src.Start(context.Background(), got.Push)
	if err != nil {
		t.Fatal(err)
	}
	want := []nodes.Node{{Addr: "db1.example:3306", Weight: 10}, {Addr: "localhost:2883", Weight: 20}, {Addr: "localhost:2884"}}
	if !slices.Equal(set.Nodes, want) {
		t.Fatalf("Start = %+v, want %+v", set.Nodes, want)
	}
	srv.setSRV("_mysql._tcp.proxies.test", record{"localhost", 2885, 5}, record{".", 0, 0})
	waitFor(t, 5*time.Second, "the new SRV answer", func() bool { return got.Len() == 1 })
	if want := []nodes.Node{{Addr: "localhost:2885", Weight: 5}}; !slices.Equal(got.Last().Nodes, want) {
		t.Fatalf("update %+v, want %+v", got.Last().Nodes, want)
	}
}

// Several names are resolved and merged; a failure of one of them keeps the whole list.
func TestSeveralNames(t *testing.T) {
	srv := startDNS(t)
	srv.setIPs("a.test", "127.0.0.1", "127.0.0.2")
	srv.setIPs("b.test", "127.0.0.2")
	srv.setSRV("_mysql._tcp.c.test", record{"localhost", 3306, 1})
	l := &logs{}
	src := newSource(t, srv, l, "a.test:2883", "b.test:2883", "_mysql._tcp.c.test")
	var got updates
	set, err := src.Start(context.Background(), got.Push)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1:2883", "127.0.0.2:2883", "localhost:3306"}; !slices.Equal(set.Addrs(), want) {
		t.Fatalf("Start = %v, want %v", set.Addrs(), want)
	}
	srv.remove("b.test")
	waitFor(t, 5*time.Second, "the failure line", func() bool { return l.Count("DNS lookup failed") == 1 })
	rounds(t, srv, 10)
	lines := l.Find("DNS lookup failed")
	if len(lines) != 1 || got.Len() != 0 || !strings.Contains(lines[0].Attrs["reason"], "b.test") {
		t.Fatalf("%d updates and these lines, want none and one naming b.test:\n%s", got.Len(), l.All())
	}
}

// NXDOMAIN and an empty answer keep the list, each logged once; answers coming back are
// logged once and applied.
func TestFailuresKeepTheList(t *testing.T) {
	for _, c := range []struct {
		name    string
		breakIt func(*dnsServer)
		kind    string
	}{
		{"NXDOMAIN", func(s *dnsServer) { s.remove("proxies.test") }, "no such host"},
		{"empty answer", func(s *dnsServer) { s.setEmpty("proxies.test") }, "no such host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := startDNS(t)
			srv.setIPs("proxies.test", "127.0.0.1", "127.0.0.2")
			l := &logs{}
			src := newSource(t, srv, l, "proxies.test:2883")
			var got updates
			if _, err := src.Start(context.Background(), got.Push); err != nil {
				t.Fatal(err)
			}
			c.breakIt(srv)
			waitFor(t, 5*time.Second, "the failure line", func() bool { return l.Count("DNS lookup failed") > 0 })
			rounds(t, srv, 10)
			lines := l.Find("DNS lookup failed")
			if len(lines) != 1 || got.Len() != 0 {
				t.Fatalf("%d updates and %d failure lines, want 0 and 1:\n%s", got.Len(), len(lines), l.All())
			}
			if r := lines[0].Attrs["reason"]; !strings.Contains(r, "proxies.test") || !strings.Contains(r, c.kind) {
				t.Fatalf("reason %q does not name the name and %q", r, c.kind)
			}
			srv.setIPs("proxies.test", "127.0.0.3")
			waitFor(t, 5*time.Second, "the new answer", func() bool { return got.Len() == 1 })
			if !slices.Equal(got.Last().Addrs(), []string{"127.0.0.3:2883"}) || l.Count("DNS answers again") != 1 {
				t.Fatalf("update %v; log:\n%s", got.Last().Addrs(), l.All())
			}
		})
	}
}

func TestStartFails(t *testing.T) {
	srv := startDNS(t)
	srv.setEmpty("empty.test")
	for _, name := range []string{"missing.test:2883", "empty.test:2883", "_mysql._tcp.missing.test"} {
		src := newSource(t, srv, &logs{}, name)
		_, err := src.Start(context.Background(), func(nodes.Set) { t.Error("update called") })
		if err == nil || !strings.Contains(err.Error(), strings.Split(name, ":")[0]) {
			t.Errorf("Start(%s) = %v, want an error naming it", name, err)
		}
	}

	// A server that does not answer: Start gives up after the timeout.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	src, err := dns.New(dns.Config{Names: []string{"proxies.test:2883"}, Server: pc.LocalAddr().String(), Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	start := time.Now()
	if _, err := src.Start(context.Background(), func(nodes.Set) {}); err == nil || !strings.Contains(err.Error(), "proxies.test") {
		t.Fatalf("Start against a silent server = %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Start took %v, want about the 200ms timeout", took)
	}
}

// fakeResolver answers from maps, for what a real server cannot easily say.
type fakeResolver struct {
	ips map[string][]net.IPAddr
	srv map[string][]*net.SRV
}

func (f fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	return f.ips[host], nil
}

func (f fakeResolver) LookupSRV(_ context.Context, _, _, name string) (string, []*net.SRV, error) {
	return name, f.srv[name], nil
}

func TestInjectedResolver(t *testing.T) {
	res := fakeResolver{
		ips: map[string][]net.IPAddr{
			"mapped": {{IP: net.ParseIP("10.0.0.1")}}, // 16-byte IPv4
			"zoned":  {{IP: net.ParseIP("fe80::1"), Zone: "eth0"}},
			"none":   nil,
		},
		srv: map[string][]*net.SRV{"_x._tcp.none": {{Target: ".", Port: 0}}},
	}
	for _, c := range []struct {
		name, want string // want "" for a failure
	}{
		{"mapped:1", "10.0.0.1:1"},
		{"zoned:2", "[fe80::1%eth0]:2"},
		{"none:3", ""},
		{"_x._tcp.none", ""},
	} {
		src, err := dns.New(dns.Config{Names: []string{c.name}, Resolver: res, Logger: (&logs{}).Logger()})
		if err != nil {
			t.Fatal(err)
		}
		set, err := src.Start(context.Background(), func(nodes.Set) {})
		src.Close()
		switch {
		case c.want == "" && (err == nil || !strings.Contains(err.Error(), "no usable record")):
			t.Errorf("%s: Start = %v, %v; want an empty-answer error", c.name, set.Addrs(), err)
		case c.want != "" && (err != nil || !slices.Equal(set.Addrs(), []string{c.want})):
			t.Errorf("%s: Start = %v, %v; want %s", c.name, set.Addrs(), err, c.want)
		}
	}
}

// TestNamesCarryZones: a name written "name~zone" gives its zone to every node it resolves to,
// A/AAAA and SRV alike; DNS records carry none of their own.
func TestNamesCarryZones(t *testing.T) {
	res := fakeResolver{
		ips: map[string][]net.IPAddr{"a.test": {{IP: net.ParseIP("10.0.0.1")}, {IP: net.ParseIP("10.0.0.2")}}},
		srv: map[string][]*net.SRV{"_mysql._tcp.b.test": {{Target: "p3.b.test.", Port: 2883, Weight: 2}}},
	}
	src, err := dns.New(dns.Config{Names: []string{"a.test:2883~az1", "_mysql._tcp.b.test~az2"}, Resolver: res, Logger: (&logs{}).Logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"10.0.0.1:2883": "az1", "10.0.0.2:2883": "az1", "p3.b.test:2883": "az2"}
	if len(set.Nodes) != len(want) {
		t.Fatalf("nodes %v, want %v", set.Nodes, want)
	}
	for _, n := range set.Nodes {
		if want[n.Addr] != n.AZ {
			t.Errorf("%s: zone %q, want %q", n.Addr, n.AZ, want[n.Addr])
		}
	}
	if _, err := dns.New(dns.Config{Names: []string{"a.test:2883~az 1"}}); err == nil || !strings.Contains(err.Error(), "zone") {
		t.Errorf("a zone with a space: New = %v, want an error about the zone", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  dns.Config
		want string
	}{
		{dns.Config{}, "Names"},
		{dns.Config{Names: []string{"proxies.test"}}, "no port"},
		{dns.Config{Names: []string{"_mysql._tcp.x:3306"}}, "drop the :port"},
		{dns.Config{Names: []string{"_mysql"}}, "_service._proto.name"},
		{dns.Config{Names: []string{"p.test:0"}}, "port"},
		{dns.Config{Names: []string{"p.test:1"}, Server: "1.2.3.4", Resolver: net.DefaultResolver}, "both"},
		{dns.Config{Names: []string{"p.test:1"}, Timeout: -1}, "Timeout"},
		{dns.Config{Names: []string{"p.test:1"}, RefreshInterval: -1}, "RefreshInterval"},
	} {
		if _, err := dns.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error mentioning %q", c.cfg, err, c.want)
		}
	}
}
