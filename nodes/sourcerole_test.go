package nodes

import (
	"strings"
	"testing"
)

func TestParseEntryRole(t *testing.T) {
	for in, want := range map[string]Node{
		"10.0.0.1:2883#replica":      {Addr: "10.0.0.1:2883", Role: RoleReplica},
		" 10.0.0.1:2883*3#primary ":  {Addr: "10.0.0.1:2883", Weight: 3, Role: RolePrimary},
		"[fd00::1]:1#Standby":        {Addr: "[fd00::1]:1", Role: RoleStandby},
		"H.Example:02883*10#REPLICA": {Addr: "h.example:2883", Weight: 10, Role: RoleReplica},
	} {
		n, err := ParseEntry(in)
		if err != nil || n != want {
			t.Errorf("ParseEntry(%q) = %+v, %v; want %+v", in, n, err, want)
			continue
		}
		back, err := ParseEntry(n.Entry())
		if err != nil || back != n {
			t.Errorf("ParseEntry(%q) (Entry of %q) = %+v, %v; want %+v", n.Entry(), in, back, err, n)
		}
	}
	if e := (Node{Addr: "a:1", Weight: 2, Role: RoleReplica}).Entry(); e != "a:1*2#replica" {
		t.Errorf("Entry = %q, want a:1*2#replica", e)
	}
	for in, want := range map[string]string{
		"10.0.0.1:2883#":          `"10.0.0.1:2883" has role "", want primary, replica or standby after '#'`,
		"10.0.0.1:2883#writer":    `has role "writer"`,
		"10.0.0.1:2883#unknown":   `has role "unknown"`,
		"10.0.0.1:2883#replica*3": "write the weight first: host:port*weight#role",
		"10.0.0.1:2883#a#b":       `has role "a#b"`,
		"10.0.0.1:2883*0#primary": `has weight "0"`,
		"10.0.0.1#primary":        "is not host:port",
	} {
		if _, err := ParseEntry(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEntry(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestDocumentRoles(t *testing.T) {
	doc := `{"schema":"s","proxy":["10.0.0.1:3306","10.0.0.2:3306","10.0.0.3:3306"],
		"az.proxy":{"az1":["10.1.0.5:2883"]},"weight":{"10.0.0.1:3306":2},
		"role":{"10.0.0.1:3306":"primary","10.0.0.2:03306":"Replica","10.1.0.5:2883":"standby"}}`
	d, err := ParseDocument([]byte(doc), "s")
	if err != nil {
		t.Fatal(err)
	}
	got := d.Nodes(d.Proxy)
	want := []Node{{Addr: "10.0.0.1:3306", Weight: 2, Role: RolePrimary}, {Addr: "10.0.0.2:3306", Role: RoleReplica}, {Addr: "10.0.0.3:3306"}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Nodes(proxy)[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if az := d.Nodes(d.AZProxy["az1"]); az[0].Role != RoleStandby {
		t.Fatalf("Nodes(az.proxy az1) = %+v, want role standby", az)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"bad name": {`{"schema":"s","proxy":["a:1"],"role":{"a:1":"writer"}}`, `role of "a:1": role "writer": want "primary", "replica" or "standby"`},
		"empty":    {`{"schema":"s","proxy":["a:1"],"role":{"a:1":""}}`, `role of "a:1": role ""`},
		"unknown":  {`{"schema":"s","proxy":["a:1"],"role":{"a:1":"unknown"}}`, `role "unknown"`},
		"number":   {`{"schema":"s","proxy":["a:1"],"role":{"a:1":1}}`, "not valid JSON"},
		"unlisted": {`{"schema":"s","proxy":["a:1"],"role":{"b:1":"primary"}}`, `role names "b:1", which neither proxy nor az.proxy lists`},
		"bad key":  {`{"schema":"s","proxy":["a:1"],"role":{"a":"primary"}}`, `role: "a" is not host:port`},
		"twice":    {`{"schema":"s","proxy":["a:1"],"role":{"a:1":"primary","A:01":"replica"}}`, "role names one proxy twice"},
	} {
		_, err := ParseDocument([]byte(tc.doc), "s")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
}
