package configserver

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/nodes"
)

func azDocument() *nodes.Document {
	return &nodes.Document{
		Schema: "app",
		Proxy:  []string{"127.0.0.3:3001", "127.0.0.1:3001", "127.0.0.2:3001"},
		AZList: map[string][]string{
			"az1": {"127.1.0.0/16"},
			"az2": {"127.2.0.0/16"},
			"az3": {"127.3.0.0/16"}, // no az.proxy entry
		},
		AZProxy: map[string][]string{
			"az1": {"127.0.0.1:3001"},
			"az2": {"127.0.0.3:3001", "127.0.0.2:3001"},
		},
		ProxyPolicy: nodes.PolicyAZ,
	}
}

// zonedMD5 is the md5 of an answer listing list from azDocument: its entries carry the zone
// of their az.proxy set ("addr~az1"), so the md5 is that of the entries, not of the bare list
// (see newAnswer).
func zonedMD5(list []string) string {
	entries := make([]string, 0, len(list))
	for _, n := range azDocument().Nodes(list) {
		entries = append(entries, n.Entry())
	}
	slices.Sort(entries)
	return nodes.ListMD5(entries)
}

func TestAZAnswersCarryZones(t *testing.T) {
	m := mustMemory(t, azDocument())
	s, _, _ := startServer(t, m, nil)
	r := decode(t, serve(s, http.MethodGet, "/fetch_sql_proxy_list?schema=app&clientFeatureLevel=2&policy=default", "127.9.0.1:5000"))
	const want = `"zone":{"127.0.0.1:3001":"az1","127.0.0.2:3001":"az2","127.0.0.3:3001":"az2"}`
	if r.Code != 200 || !strings.Contains(r.raw, want) {
		t.Errorf("full list: %s, want it to carry %s", r.raw, want)
	}
}

func TestAZChoice(t *testing.T) {
	m := mustMemory(t, azDocument())
	s, _, _ := startServer(t, m, nil)
	full := []string{"127.0.0.1:3001", "127.0.0.2:3001", "127.0.0.3:3001"}
	az1 := []string{"127.0.0.1:3001"}
	az2 := []string{"127.0.0.2:3001", "127.0.0.3:3001"}
	const base = "/fetch_sql_proxy_list?schema=app&clientVersion=lbd-test"
	cases := []struct {
		name   string
		query  string
		remote string
		want   []string
	}{
		{"az parameter", "&clientFeatureLevel=2&az=az1", "127.9.0.1:5000", az1},
		{"az parameter, higher level", "&clientFeatureLevel=3&az=az2&ip=127.1.0.1", "127.1.0.1:5000", az2},
		{"ip parameter", "&clientFeatureLevel=2&ip=127.1.4.5", "127.9.0.1:5000", az1},
		{"source address", "&clientFeatureLevel=2", "127.1.200.1:5000", az1},
		{"mapped source address", "&clientFeatureLevel=2", "[::ffff:127.2.0.9]:5000", az2},
		{"unknown az, ip known", "&clientFeatureLevel=2&az=az9&ip=127.2.0.1", "127.1.0.1:5000", az2},
		{"ip outside every az wins over the source", "&clientFeatureLevel=2&ip=127.9.9.9", "127.1.0.1:5000", full},
		{"malformed ip, source used", "&clientFeatureLevel=2&ip=nope", "127.1.0.1:5000", az1},
		{"az without proxies", "&clientFeatureLevel=2&ip=127.3.0.1", "127.9.0.1:5000", full},
		{"no az at all", "&clientFeatureLevel=2", "127.9.0.1:5000", full},
		{"old client", "&az=az1&ip=127.1.0.1", "127.1.0.1:5000", full},
		{"feature level 1", "&clientFeatureLevel=1&az=az1", "127.1.0.1:5000", full},
		{"feature level garbage", "&clientFeatureLevel=two&az=az1", "127.1.0.1:5000", full},
		{"policy=default", "&clientFeatureLevel=2&az=az1&policy=default", "127.1.0.1:5000", full},
		{"policy=az", "&clientFeatureLevel=2&az=az1&policy=az", "127.1.0.1:5000", az1},
	}
	md5s := map[string]string{}
	for _, c := range cases {
		r := decode(t, serve(s, http.MethodGet, base+c.query, c.remote))
		if r.Code != 200 || !slices.Equal(r.Data, c.want) {
			t.Errorf("%s: got %s, want %v", c.name, r.raw, c.want)
			continue
		}
		if r.MD5 != zonedMD5(c.want) {
			t.Errorf("%s: md5 %s, want %s", c.name, r.MD5, zonedMD5(c.want))
		}
		md5s[r.MD5] = c.name
	}
	if len(md5s) != 3 {
		t.Errorf("want 3 distinct md5s (full, az1, az2), got %v", md5s)
	}

	// Each variant has its own md5: az1's md5 is current for az1 only.
	az1MD5 := zonedMD5(az1)
	if r := decode(t, serve(s, http.MethodGet, base+"&clientFeatureLevel=2&az=az1&md5="+az1MD5, "127.9.0.1:1")); r.raw != `{"code":304}` {
		t.Errorf("az1 with az1's md5: %s", r.raw)
	}
	if r := decode(t, serve(s, http.MethodGet, base+"&clientFeatureLevel=2&az=az1&policy=default&md5="+az1MD5, "127.9.0.1:1")); r.Code != 200 || !slices.Equal(r.Data, full) {
		t.Errorf("default list with az1's md5: %s", r.raw)
	}
}

func TestAZPolicyOff(t *testing.T) {
	doc := azDocument()
	doc.ProxyPolicy = nodes.PolicyDefault
	m := mustMemory(t, doc)
	s, _, _ := startServer(t, m, nil)
	r := decode(t, serve(s, http.MethodGet, "/fetch_sql_proxy_list?schema=app&clientFeatureLevel=2&az=az1", "127.1.0.1:1"))
	if len(r.Data) != 3 {
		t.Fatalf("policy default gave %s", r.raw)
	}
}

// TestAZBySourceOverTCP lets a real TCP client be located by its source address.
func TestAZBySourceOverTCP(t *testing.T) {
	doc := azDocument()
	doc.AZList["az1"] = append(doc.AZList["az1"], "127.0.0.1/32", "::1/128")
	m := mustMemory(t, doc)
	_, hs, _ := startServer(t, m, nil)
	cl := &javaClient{base: hs.URL, schema: "app", extra: map[string]string{"clientFeatureLevel": "2", "clientVersion": "lbd/test"}}
	if r := cl.fetch(t); !slices.Equal(r.Data, []string{"127.0.0.1:3001"}) {
		t.Fatalf("by source address: %s", r.raw)
	}
	cl.extra["policy"] = "default"
	if r := cl.fetch(t); len(r.Data) != 3 {
		t.Fatalf("policy=default: %s", r.raw)
	}
}
