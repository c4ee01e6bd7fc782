package nodes

import (
	"fmt"
	"strings"
	"testing"
)

func TestDocumentWeights(t *testing.T) {
	doc := `{"schema":"s","proxy":["10.0.0.1:3306","10.0.0.2:3306","10.0.0.3:3306"],
		"az.proxy":{"az1":["10.1.0.5:2883"]},"weight":{"10.0.0.1:3306":3,"10.0.0.2:03306":0,"10.1.0.5:2883":2}}`
	d, err := ParseDocument([]byte(doc), "s")
	if err != nil {
		t.Fatal(err)
	}
	// A weight key is matched in canonical form; 0 and absent are the default (Weight 0).
	var got []string
	for _, n := range d.Nodes(d.Proxy) {
		got = append(got, fmt.Sprintf("%s*%d", n.Addr, n.Weight))
	}
	if strings.Join(got, " ") != "10.0.0.1:3306*3 10.0.0.2:3306*0 10.0.0.3:3306*0" {
		t.Fatalf("Nodes(proxy) = %v", got)
	}
	if got := d.Nodes(d.AZProxy["az1"]); got[0].Weight != 2 {
		t.Fatalf("Nodes(az.proxy az1) = %v, want weight 2", got)
	}
	for name, tc := range map[string]struct{ doc, want string }{
		"negative":  {`{"schema":"s","proxy":["a:1"],"weight":{"a:1":-1}}`, `weight of "a:1": weight -1 is out of range: it must be a whole number from 0 to 65535`},
		"too large": {`{"schema":"s","proxy":["a:1"],"weight":{"a:1":65536}}`, "weight 65536 is out of range"},
		"fraction":  {`{"schema":"s","proxy":["a:1"],"weight":{"a:1":1.5}}`, "not valid JSON"},
		"unlisted":  {`{"schema":"s","proxy":["a:1"],"weight":{"b:1":2}}`, `weight names "b:1", which neither proxy nor az.proxy lists`},
		"bad key":   {`{"schema":"s","proxy":["a:1"],"weight":{"a":2}}`, `weight: "a" is not host:port`},
		"twice":     {`{"schema":"s","proxy":["a:1"],"weight":{"a:1":2,"A:01":3}}`, "weight names one proxy twice"},
	} {
		_, err := ParseDocument([]byte(tc.doc), "s")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
}

func TestParseEntry(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:2883":      "10.0.0.1:2883",
		" 10.0.0.1:2883*2 ":  "10.0.0.1:2883*2",
		"[fd00::1]:1*65535":  "[fd00::1]:1*65535",
		"H.Example:02883*10": "h.example:2883*10",
	} {
		n, err := ParseEntry(in)
		if err != nil || n.Entry() != want {
			t.Errorf("ParseEntry(%q) = %q, %v; want %q", in, n.Entry(), err, want)
		}
	}
	for in, want := range map[string]string{
		"10.0.0.1:2883*0":   `"10.0.0.1:2883" has weight "0", want a whole number from 1 to 65535 after '*'`,
		"10.0.0.1:2883*x":   `has weight "x"`,
		"10.0.0.1:2883* 2":  `has weight " 2"`,
		"[fd00::1]*2":       "is not host:port",
		"10.0.0.1:2883**2":  `has weight "*2"`,
		"10.0.0.1:2883*1e3": `has weight "1e3"`,
	} {
		if _, err := ParseEntry(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEntry(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestParseEntryZone(t *testing.T) {
	// Zones come last: after the address, the weight and the role.
	for in, want := range map[string]string{
		"10.0.0.1:2883~az1":                 "10.0.0.1:2883~az1",
		"10.0.0.1:2883*2#replica~cn-hz.h_1": "10.0.0.1:2883*2#replica~cn-hz.h_1",
		"[fe80::1%eth0]:1#primary~az2":      "[fe80::1%eth0]:1#primary~az2",
	} {
		n, err := ParseEntry(in)
		if err != nil || n.Entry() != want {
			t.Errorf("ParseEntry(%q) = %q, %v; want %q", in, n.Entry(), err, want)
		}
	}
	for in, want := range map[string]string{
		"10.0.0.1:2883~":           `zone "" must be 1 to 64 characters`,
		"10.0.0.1:2883~az 1":       `zone "az 1" has the character ' '`,
		"10.0.0.1:2883~az1*2":      "write the zone last",
		"10.0.0.1:2883~az1#reader": "write the zone last",
		"10.0.0.1:2883~a~b":        `zone "a~b" has the character '~'`,
	} {
		if _, err := ParseEntry(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseEntry(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}
