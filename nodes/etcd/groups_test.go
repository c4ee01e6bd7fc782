package etcd_test

import (
	"context"
	"testing"
	"time"
)

// TestGroupsFollow: the document's groups reach the set, in name order, and a change of groups
// alone (a proxy moved into a group) is a new set.
func TestGroupsFollow(t *testing.T) {
	srv := startEtcd(t)
	srv.put(testKey, `{"schema":"im_user","proxy":["10.0.0.1:2883","10.0.0.2:2883"],"group":{"10.0.0.2:2883":["reporting","analytics"]}}`)
	src := newSource(t, srv, &logs{}, time.Hour)
	var got updates
	set, err := src.Start(context.Background(), got.Push)
	if err != nil {
		t.Fatal(err)
	}
	if set.Nodes[0].Groups != "" || set.Nodes[1].Groups != "analytics+reporting" {
		t.Fatalf("Start = %+v, want no group and analytics+reporting", set.Nodes)
	}
	srv.put(testKey, `{"schema":"im_user","proxy":["10.0.0.1:2883","10.0.0.2:2883"],"group":{"10.0.0.1:2883":["analytics"],"10.0.0.2:2883":["reporting","analytics"]}}`)
	waitFor(t, 5*time.Second, "the new groups", func() bool { return got.Len() == 1 })
	if n := got.Last().Nodes; n[0].Groups != "analytics" || n[1].Groups != "analytics+reporting" {
		t.Fatalf("update = %+v, want 10.0.0.1:2883 in analytics", n)
	}
}
