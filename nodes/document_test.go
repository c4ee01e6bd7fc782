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

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"H.Example:02883", "h.example:2883"},
		{" db-1.example.com:3306 ", "db-1.example.com:3306"},
		{"LOCALHOST:1", "localhost:1"},
		{"10.0.0.1:3306", "10.0.0.1:3306"},
		{"[10.0.0.1]:3306", "10.0.0.1:3306"},
		{"[::1]:3306", "[::1]:3306"},
		{"[0:0:0:0:0:0:0:1]:3306", "[::1]:3306"},
		{"[0000:0000::0001]:3306", "[::1]:3306"},
		{"[FD00::A]:1", "[fd00::a]:1"},
		{"[::ffff:10.0.0.1]:3306", "10.0.0.1:3306"},
		{"[::ffff:a00:1]:3306", "10.0.0.1:3306"},
		{"[fe80::1%eth0]:1", "[fe80::1%eth0]:1"},
		{"a:1", "a:1"},
		{"xn--bcher-kva.example:1", "xn--bcher-kva.example:1"},
		{"1a.example:1", "1a.example:1"},
	} {
		got, err := Canonical(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func TestCheckAddrRefuses(t *testing.T) {
	long := strings.Repeat("a", 63)
	for name, addr := range map[string]string{
		"empty":               "",
		"no port":             "a.example",
		"port 0":              "a:0",
		"port too big":        "a:65536",
		"signed port":         "a:+1",
		"no host":             ":1",
		"space":               "a b:1",
		"comma":               "a,b:1",
		"slash":               "a/b:1",
		"underscore":          "a_b:1",
		"control character":   "a\x00b:1",
		"newline":             "a\nb:1",
		"unicode":             "bücher.example:1",
		"leading hyphen":      "-a.example:1",
		"trailing hyphen":     "a-.example:1",
		"empty label":         "a..example:1",
		"leading dot":         ".a.example:1",
		"trailing dot":        "a.example.:1",
		"label of 64 bytes":   long + "a.example:1",
		"name over 253 bytes": strings.Repeat(long+".", 4) + "a:1",
		"zero-padded IPv4":    "010.000.000.001:1",
		"short IPv4":          "10.1:1",
		"IPv4 out of range":   "10.0.0.256:1",
		"decimal IPv4":        "167772161:1",
		"IPv6 unbracketed":    "::1:1",
		"bad IPv6":            "[::g]:1",
		"bracketed name":      "[a.example]:1",
		"bad zone":            "[fe80::1%e th0]:1",
		"zone of garbage":     "[fe80::1%\x01]:1",
		// Terminal escapes, in each part net.SplitHostPort, the port rule and the host rule
		// refuse: none may reach the error's text unquoted.
		"escape, bracket":    "h\x1b[31mx:1",
		"escape, no port":    "h\x1b]0;title\x07",
		"escape, two colons": "a:1,h\x1b[2J:1",
		"escape in the port": "a:1\x1b[2J",
		"escape in the host": "a\x1bb:1",
	} {
		if err := CheckAddr(addr); err == nil {
			t.Errorf("%s: CheckAddr(%q) accepted it", name, addr)
		} else if !strings.HasPrefix(err.Error(), "nodes: ") {
			t.Errorf("%s: error %q lacks the package prefix", name, err)
		} else if i := strings.IndexFunc(err.Error(), isControl); i >= 0 {
			t.Errorf("%s: error %q carries a raw control character at byte %d; the address must be quoted", name, err, i)
		}
	}
	if err := CheckAddr(strings.Repeat(long+".", 3) + strings.Repeat("a", 61) + ":1"); err != nil {
		t.Errorf("a 253-byte name: %v", err)
	}
}

// Two spellings of one node are one node: listing both is a duplicate, in a set and in a
// document alike.
func TestDuplicatesAfterCanonicalForm(t *testing.T) {
	for _, pair := range [][2]string{
		{"LOCALHOST:1", "localhost:1"},
		{"[::1]:3306", "[0:0:0:0:0:0:0:1]:3306"},
		{"10.0.0.1:3306", "[::ffff:10.0.0.1]:3306"},
		{"a.example:1", "a.example:01"},
	} {
		if err := (Set{Nodes: StaticAddrs(pair[0], pair[1])}).Validate(); err == nil || !strings.Contains(err.Error(), "listed twice") {
			t.Errorf("set %q: Validate = %v, want listed twice", pair, err)
		}
		doc := `{"schema":"s","proxy":["` + pair[0] + `","` + pair[1] + `"]}`
		if _, err := ParseDocument([]byte(doc), "s"); err == nil || !strings.Contains(err.Error(), "listed twice") {
			t.Errorf("document %s: %v, want listed twice", doc, err)
		}
		doc = `{"schema":"s","proxy":["b:1"],"az.proxy":{"az1":["` + pair[0] + `","` + pair[1] + `"]}}`
		if _, err := ParseDocument([]byte(doc), "s"); err == nil || !strings.Contains(err.Error(), "listed twice") {
			t.Errorf("document %s: %v, want listed twice", doc, err)
		}
	}
}

func TestDocumentNodesCarryTheirZone(t *testing.T) {
	d, err := ParseDocument([]byte(`{"schema":"s","proxy":["10.0.0.1:1","10.0.0.2:1","10.0.0.3:1"],
		"az.proxy":{"az2":["10.0.0.2:1","10.0.0.3:1"],"az1":["10.0.0.1:1","10.0.0.3:1"]},"proxy.policy":"default"}`), "s")
	if err != nil {
		t.Fatal(err)
	}
	got := d.Nodes(d.Proxy)
	// 10.0.0.3 is in both sets: the first AZ by name wins.
	want := []string{"az1", "az2", "az1"}
	for i, n := range got {
		if n.AZ != want[i] {
			t.Errorf("%s: zone %q, want %q", n.Addr, n.AZ, want[i])
		}
	}
	if _, err := ParseDocument([]byte(`{"schema":"s","proxy":["10.0.0.1:1"],"az.proxy":{"az 1":["10.0.0.1:1"]}}`), "s"); err == nil ||
		!strings.Contains(err.Error(), "zone") {
		t.Errorf("an AZ name with a space: error %v, want one about the zone's name", err)
	}
}
