package configserver

import (
	"context"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/remote"
)

// TestGroupsInTheAnswer: a document's groups travel next to data, as "group":{addr:[names]};
// the md5 covers them, so a proxy moved into a group reaches a client holding the old md5; and
// lbd's config-server client hands them on with the nodes.
func TestGroupsInTheAnswer(t *testing.T) {
	doc := func(groups map[string][]string) *nodes.Document {
		return &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:2883", "127.0.0.2:2883"}, Group: groups}
	}
	m := mustMemory(t, doc(map[string][]string{"127.0.0.2:2883": {"reporting", "analytics"}}))
	_, hs, _ := startServer(t, m, nil)
	cl := &javaClient{base: hs.URL, schema: "s"}

	r := cl.fetch(t)
	if want := `{"code":200,"md5":"` + r.MD5 + `","data":["127.0.0.1:2883","127.0.0.2:2883"],"group":{"127.0.0.2:2883":["analytics","reporting"]}}`; r.raw != want ||
		r.MD5 == nodes.ListMD5(r.Data) {
		t.Fatalf("body %s, want %s with an md5 other than the plain list's", r.raw, want)
	}
	first := r.MD5
	if err := m.Put(doc(map[string][]string{"127.0.0.2:2883": {"analytics"}})); err != nil {
		t.Fatal(err)
	}
	r = cl.fetch(t) // still holding the md5 of the old groups
	if r.Code != 200 || r.MD5 == first || !strings.Contains(r.raw, `"group":{"127.0.0.2:2883":["analytics"]}`) {
		t.Fatalf("after the groups changed: %s, want a 200 with a new md5", r.raw)
	}

	src, err := remote.New(remote.Config{Servers: []string{hs.URL}, Schema: "s", Logger: discard(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range set.Nodes {
		got[n.Addr] = n.Groups
	}
	if got["127.0.0.1:2883"] != "" || got["127.0.0.2:2883"] != "analytics" {
		t.Fatalf("the client's nodes %v, want 127.0.0.2:2883 in analytics", set.Nodes)
	}
}
