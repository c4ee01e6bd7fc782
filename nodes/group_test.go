package nodes

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseEntryGroups(t *testing.T) {
	// Groups come after the role and before the zone, one '+' per group, in the order written.
	for in, want := range map[string]string{
		"10.0.0.1:2883+analytics":                     "10.0.0.1:2883+analytics",
		"10.0.0.1:2883*2#replica+analytics~az1":       "10.0.0.1:2883*2#replica+analytics~az1",
		"[fd00::1]:1+reporting+analytics":             "[fd00::1]:1+reporting+analytics",
		"H.Example:2883#replica+bi_2-x":               "h.example:2883#replica+bi_2-x",
		"10.0.0.1:2883+a+b+c+d+e+f+g+h":               "10.0.0.1:2883+a+b+c+d+e+f+g+h",
		"10.0.0.1:2883+" + strings.Repeat("x", 32):    "10.0.0.1:2883+" + strings.Repeat("x", 32),
		"[fe80::1%eth0]:1#primary+oltp~cn-hz.h_1":     "[fe80::1%eth0]:1#primary+oltp~cn-hz.h_1",
		" 10.0.0.1:2883*3+analytics ":                 "10.0.0.1:2883*3+analytics",
		"10.0.0.1:2883#standby+analytics+reporting~z": "10.0.0.1:2883#standby+analytics+reporting~z",
	} {
		n, err := ParseEntry(in)
		if err != nil || n.Entry() != want {
			t.Errorf("ParseEntry(%q) = %q, %v; want %q", in, n.Entry(), err, want)
		}
	}
	for in, want := range map[string]string{
		"10.0.0.1:2883+":                           `group "" must be 1 to 32 characters`,
		"10.0.0.1:2883+a++b":                       `group "" must be 1 to 32 characters`,
		"10.0.0.1:2883+Analytics":                  `has an upper-case letter; write group names in lower case ("analytics")`,
		"10.0.0.1:2883+bi.x":                       `has the character '.'; use lower-case letters, digits, '-' and '_'`,
		"10.0.0.1:2883+a+a":                        `group "a" is given twice`,
		"10.0.0.1:2883+a+b+c+d+e+f+g+h+i":          "9 groups, more than the 8 a node may belong to",
		"10.0.0.1:2883+" + strings.Repeat("x", 33): "must be 1 to 32 characters",
		"10.0.0.1:2883+analytics#replica":          "has its groups before its weight or role; write them after: host:port*weight#role+group",
		"10.0.0.1:2883+analytics*2":                "has its groups before its weight or role",
		"10.0.0.1:2883~az1+analytics":              "has its zone before its weight, role or groups; write the zone last: host:port*weight#role+group~zone",
	} {
		if _, err := ParseEntry(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEntry(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestGroupHelpers(t *testing.T) {
	if got := JoinGroups("reporting", "analytics"); got != "analytics+reporting" {
		t.Errorf("JoinGroups = %q", got)
	}
	if JoinGroups() != "" || SplitGroups("") != nil {
		t.Error("no group is not the empty string")
	}
	if got := SplitGroups("a+b"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("SplitGroups = %q", got)
	}
	for _, tc := range []struct {
		groups, name string
		in           bool
	}{{"a+bb+c", "bb", true}, {"a+bb+c", "b", false}, {"a", "a", true}, {"", "", false}, {"ab", "a", false}} {
		if InGroup(tc.groups, tc.name) != tc.in {
			t.Errorf("InGroup(%q, %q) = %v", tc.groups, tc.name, !tc.in)
		}
	}
}

func TestSetValidateGroups(t *testing.T) {
	set := Set{Nodes: []Node{{Addr: "a:1", Groups: "x+y"}, {Addr: "b:1", Groups: "y+x"}, {Addr: "c:1"}}}
	if err := set.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := set.Canonical().Nodes[0].Groups; got != "x+y" {
		t.Errorf("canonical groups = %q", got)
	}
	if got := set.Canonical().Nodes[1].Groups; got != "x+y" {
		t.Errorf("canonical groups = %q, want the names in order", got)
	}
	bad := Set{Nodes: []Node{{Addr: "a:1", Groups: "x+X"}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `"a:1": group "X" has an upper-case letter`) {
		t.Errorf("Validate = %v", err)
	}
	// MaxGroupSets distinct sets, no group counting as one, and no more.
	var many []Node
	for i := range MaxGroupSets {
		many = append(many, Node{Addr: fmt.Sprintf("n%d:1", i), Groups: fmt.Sprintf("g%d", i)})
	}
	if err := (Set{Nodes: many}).Validate(); err == nil || !strings.Contains(err.Error(), "17 distinct sets of groups") {
		t.Errorf("Validate of %d sets and the empty one = %v", MaxGroupSets, err)
	}
	if err := (Set{Nodes: many[:MaxGroupSets-1]}).Validate(); err != nil {
		t.Errorf("Validate of %d sets and the empty one = %v", MaxGroupSets-1, err)
	}
}

func TestDocumentGroups(t *testing.T) {
	doc := `{"schema":"s","proxy":["10.0.0.1:3306","10.0.0.2:3306","10.0.0.3:3306"],
		"az.proxy":{"az1":["10.1.0.5:2883"]},
		"group":{"10.0.0.2:03306":["reporting","analytics"],"10.0.0.3:3306":["analytics"],"10.1.0.5:2883":["oltp"]}}`
	d, err := ParseDocument([]byte(doc), "s")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range d.Nodes(d.Proxy) {
		got = append(got, n.Entry())
	}
	if want := "10.0.0.1:3306 10.0.0.2:3306+analytics+reporting 10.0.0.3:3306+analytics"; strings.Join(got, " ") != want {
		t.Fatalf("Nodes(proxy) = %v, want %s", got, want)
	}
	if got := d.Nodes(d.AZProxy["az1"]); got[0].Groups != "oltp" {
		t.Fatalf("Nodes(az.proxy az1) = %v, want group oltp", got)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"empty list": {`{"schema":"s","proxy":["a:1"],"group":{"a:1":[]}}`, `group of "a:1": an empty list of groups`},
		"bad name":   {`{"schema":"s","proxy":["a:1"],"group":{"a:1":["BI"]}}`, `group of "a:1": group "BI" has an upper-case letter`},
		"joined":     {`{"schema":"s","proxy":["a:1"],"group":{"a:1":["a+b"]}}`, `group "a+b" holds '+': give each group as an element of the list`},
		"twice":      {`{"schema":"s","proxy":["a:1"],"group":{"a:1":["x","x"]}}`, `group "x" is given twice`},
		"unlisted":   {`{"schema":"s","proxy":["a:1"],"group":{"b:1":["x"]}}`, `group names "b:1", which neither proxy nor az.proxy lists`},
		"not a list": {`{"schema":"s","proxy":["a:1"],"group":{"a:1":"x"}}`, "not valid JSON"},
	} {
		_, err := ParseDocument([]byte(tc.doc), "s")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
	// Too many sets in one list is refused, naming the list.
	var proxies, groups []string
	for i := range MaxGroupSets + 1 {
		a := fmt.Sprintf("10.0.0.%d:1", i+1)
		proxies = append(proxies, `"`+a+`"`)
		groups = append(groups, fmt.Sprintf(`"%s":["g%d"]`, a, i))
	}
	many := `{"schema":"s","proxy":[` + strings.Join(proxies, ",") + `],"group":{` + strings.Join(groups, ",") + `}}`
	if _, err := ParseDocument([]byte(many), "s"); err == nil || !strings.Contains(err.Error(), `schema "s": proxy: the nodes belong to 18 distinct sets of groups`) {
		t.Errorf("ParseDocument of too many sets = %v", err)
	}
}
