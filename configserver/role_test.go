package configserver

import (
	"slices"
	"testing"

	"github.com/lbd-go/lbd/nodes"
)

// TestRolesInTheAnswer: a document's roles travel next to data, which stays the plain list Java
// clients read; the md5 covers them, so a switchover written into the document (roles swapped,
// same proxies) reaches a client holding the old md5; a document without roles answers as the
// Java server does.
func TestRolesInTheAnswer(t *testing.T) {
	doc := func(primary, replica string) *nodes.Document {
		return &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:2883", "127.0.0.2:2883"},
			Role: map[string]string{primary: "primary", replica: "replica"}}
	}
	m := mustMemory(t, doc("127.0.0.1:2883", "127.0.0.2:2883"))
	_, hs, _ := startServer(t, m, nil)
	cl := &javaClient{base: hs.URL, schema: "s"}

	r := cl.fetch(t)
	plain := nodes.ListMD5([]string{"127.0.0.1:2883", "127.0.0.2:2883"})
	if r.Code != 200 || !slices.Equal(r.Data, []string{"127.0.0.1:2883", "127.0.0.2:2883"}) || r.MD5 == plain {
		t.Fatalf("first fetch: %s; want the plain list in data and an md5 other than the plain list's", r.raw)
	}
	want := `{"code":200,"md5":"` + r.MD5 + `","data":["127.0.0.1:2883","127.0.0.2:2883"],"role":{"127.0.0.1:2883":"primary","127.0.0.2:2883":"replica"}}`
	if r.raw != want {
		t.Fatalf("body %s, want %s", r.raw, want)
	}
	if r := cl.fetch(t); r.raw != `{"code":304}` {
		t.Fatalf("same md5: %s", r.raw)
	}
	first := r.MD5

	if err := m.Put(doc("127.0.0.2:2883", "127.0.0.1:2883")); err != nil {
		t.Fatal(err)
	}
	r = cl.fetch(t) // still holding the md5 of the old roles
	if r.Code != 200 || r.MD5 == first {
		t.Fatalf("after the roles swapped: %s, want a 200 with a new md5", r.raw)
	}
	want = `{"code":200,"md5":"` + r.MD5 + `","data":["127.0.0.1:2883","127.0.0.2:2883"],"role":{"127.0.0.1:2883":"replica","127.0.0.2:2883":"primary"}}`
	if r.raw != want {
		t.Fatalf("body %s, want %s", r.raw, want)
	}

	plainDoc := &nodes.Document{Schema: "s", Proxy: []string{"127.0.0.1:2883", "127.0.0.2:2883"}}
	if err := m.Put(plainDoc); err != nil {
		t.Fatal(err)
	}
	r = cl.fetch(t)
	if r.raw != `{"code":200,"md5":"`+plain+`","data":["127.0.0.1:2883","127.0.0.2:2883"]}` {
		t.Fatalf("without roles: %s, want the Java server's answer", r.raw)
	}
}
