package nodes

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
)

// TestListMD5 computes the expected values independently: the compact JSON text is written out
// by hand, as lb-driver's server produces it, and hashed.
func TestListMD5(t *testing.T) {
	hash := func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	cases := []struct {
		list []string
		json string
	}{
		{[]string{"10.0.0.1:3306", "10.0.0.2:3306"}, `["10.0.0.1:3306","10.0.0.2:3306"]`},
		{[]string{"10.0.0.2:3306", "10.0.0.1:3306"}, `["10.0.0.1:3306","10.0.0.2:3306"]`},
		{[]string{"b.example:1", "a.example:2", "[fd00::1]:3"}, `["[fd00::1]:3","a.example:2","b.example:1"]`},
		{[]string{"x:1"}, `["x:1"]`},
		{[]string{"10.0.0.10:1", "10.0.0.9:1"}, `["10.0.0.10:1","10.0.0.9:1"]`},
	}
	for _, c := range cases {
		if got, want := ListMD5(c.list), hash(c.json); got != want {
			t.Errorf("ListMD5(%v) = %s, want %s (md5 of %s)", c.list, got, want, c.json)
		}
	}
}

func TestParseDocument(t *testing.T) {
	good := `{"schema":"im_user","auth.enable":true,"api.keys":["k1",42],"proxy":[" 10.0.0.1:3306","10.0.0.2:3306"],
		"az.list":{"az1":["10.1.0.0/16"]},"az.proxy":{"az1":["10.1.0.5:2883"]},"proxy.policy":"az"}`
	d, err := ParseDocument([]byte(good), "im_user")
	if err != nil {
		t.Fatal(err)
	}
	mapped := &Document{AZList: map[string][]string{"az2": {"::ffff:10.9.0.0/112"}}}
	if got := mapped.AZOf("10.9.1.2"); got != "az2" {
		t.Fatalf("an IPv4-mapped block did not match a plain IPv4 client: %q", got)
	}
	if d.Proxy[0] != "10.0.0.1:3306" || d.APIKeys[1] != "42" || d.AZOf("10.1.2.3") != "az1" || d.AZOf("10.2.0.1") != "" {
		t.Fatalf("parsed %+v", d)
	}
	bad := map[string]string{
		"not json":       `{"schema":`,
		"no schema":      `{"proxy":["a:1"]}`,
		"wrong schema":   `{"schema":"other","proxy":["a:1"]}`,
		"no proxy":       `{"schema":"im_user"}`,
		"empty proxy":    `{"schema":"im_user","proxy":[]}`,
		"bad entry":      `{"schema":"im_user","proxy":["a"]}`,
		"bad port":       `{"schema":"im_user","proxy":["a:0"]}`,
		"duplicate":      `{"schema":"im_user","proxy":["a:1","a:1"]}`,
		"auth, no keys":  `{"schema":"im_user","auth.enable":true,"proxy":["a:1"]}`,
		"bad az proxy":   `{"schema":"im_user","proxy":["a:1"],"az.proxy":{"az1":["b"]}}`,
		"bad cidr":       `{"schema":"im_user","proxy":["a:1"],"az.list":{"az1":["10.0.0.0/33"]}}`,
		"bad policy":     `{"schema":"im_user","proxy":["a:1"],"proxy.policy":"nearest"}`,
		"trailing":       `{"schema":"im_user","proxy":["a:1"]} {}`,
		"proxy not list": `{"schema":"im_user","proxy":"a:1"}`,
	}
	for name, doc := range bad {
		if _, err := ParseDocument([]byte(doc), "im_user"); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		} else if !strings.HasPrefix(err.Error(), "nodes: ") {
			t.Errorf("%s: error %q lacks the package prefix", name, err)
		}
	}
}

func TestSetValidate(t *testing.T) {
	if err := (Set{}).Validate(); err != ErrEmptySet {
		t.Fatalf("empty set: %v", err)
	}
	if err := (Set{Nodes: StaticAddrs("a:1", "a:1")}).Validate(); err == nil {
		t.Fatal("duplicate accepted")
	}
	if err := (Set{Nodes: StaticAddrs("a:1", "[::1]:2")}).Validate(); err != nil {
		t.Fatal(err)
	}
}
