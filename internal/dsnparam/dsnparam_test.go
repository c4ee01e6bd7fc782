package dsnparam

import (
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// The value parsers take their whole range and refuse a value outside it with a message giving
// the range; the formatters round up and report a value other than the default.
func TestValues(t *testing.T) {
	var d time.Duration
	if err := Seconds("5", &d); err != nil || d != 5*time.Second {
		t.Errorf("Seconds(5) = %v, %v", d, err)
	}
	if err := Seconds("0", &d); err == nil || !strings.Contains(err.Error(), "from 1 to 31622400") {
		t.Errorf("Seconds(0) = %v; want the range", err)
	}
	if err := Millis("3600001", &d); err == nil || !strings.Contains(err.Error(), "from 1 to 3600000") {
		t.Errorf("Millis(3600001) = %v; want the range", err)
	}
	var n int
	if err := Bounded("0", 3, &n); err != nil || n != 0 {
		t.Errorf("Bounded(0, 3) = %d, %v", n, err)
	}
	if err := Bounded("4", 3, &n); err == nil {
		t.Error("Bounded(4, 3) passed")
	}
	if err := PositiveInt("1001", &n); err == nil {
		t.Error("PositiveInt(1001) passed")
	}
	var b bool
	if err := Bool("yes", &b); err == nil || err.Error() != "must be true or false" {
		t.Errorf("Bool(yes) = %v", err)
	}
	if s, set := FormatSeconds(1500*time.Millisecond, time.Second); s != "2" || !set {
		t.Errorf("FormatSeconds(1.5 s) = %q, %v; want 2 (rounded up), set", s, set)
	}
	if s, set := FormatMillis(time.Second, time.Second); s != "1000" || set {
		t.Errorf("FormatMillis(default) = %q, %v; want 1000, not set", s, set)
	}
}

// The address list: canonical entries with their weights, roles, zones and groups; a stray
// comma, a duplicate and a bad entry are errors.
func TestParseNodes(t *testing.T) {
	ns, err := ParseNodes("a:1*3#primary+g~z1, b:2")
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.List) != 2 || ns.List[0] != "a:1" || ns.List[1] != "b:2" || ns.Weights["a:1"] != 3 ||
		ns.Roles["a:1"] != nodes.RolePrimary || ns.Zones["a:1"] != "z1" || ns.Groups["a:1"] != "g" {
		t.Errorf("ParseNodes = %+v", ns)
	}
	if ns, err := ParseNodes("a:1"); err != nil || ns.Weights != nil || ns.Roles != nil || ns.Zones != nil || ns.Groups != nil {
		t.Errorf("ParseNodes(a:1) = %+v, %v; want no maps", ns, err)
	}
	for in, want := range map[string]string{
		"a:1,":    "empty entry",
		"a:1,a:1": "listed twice",
		"a":       "proxy list",
	} {
		if _, err := ParseNodes(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseNodes(%q) = %v; want an error saying %q", in, err, want)
		}
	}
}

// An unknown key: a typo of a name is named, a session variable passes, a camelCase key nobody
// reads is refused.
func TestUnknown(t *testing.T) {
	names, others := []string{"checkHealthIntervalSeconds"}, []string{"etcdKey"}
	for key, want := range map[string]string{
		"checkhealthintervalseconds": `did you mean "checkHealthIntervalSeconds"`,
		"checkHealthIntervalSecond":  `did you mean "checkHealthIntervalSeconds"`,
		"parsetime":                  `go-sql-driver's "parseTime"`,
		"etcdKey":                    "another network",
		"etcdkey":                    `did you mean "etcdKey"? That one is read by the node source of another network`,
		"someSetting":                "server variables are snake_case",
		"sql_mode":                   "",
	} {
		err := Unknown(key, "lb", names, others)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Unknown(%q) = %v; want %q", key, err, want)
		}
	}
}

// A go-sql-driver value it refuses is named with a hint; lbd's own keys are skipped.
func TestDriverError(t *testing.T) {
	err := DriverError("u:p@lb(a:1)/db?timeout=5&x=1", func(string) bool { return false })
	if err == nil || !strings.Contains(err.Error(), `timeout="5"`) || !strings.Contains(err.Error(), "timeout=5s") {
		t.Errorf("DriverError(timeout=5) = %v", err)
	}
	if err := DriverError("u:p@lb(a:1)/db?timeout=5", func(k string) bool { return k == "timeout" }); err != nil {
		t.Errorf("DriverError with timeout as lbd's own = %v; want nil", err)
	}
	if got := WithPlaceholderAddr("u:p@lb()/db"); got != "u:p@lb("+PlaceholderAddr+")/db" {
		t.Errorf("WithPlaceholderAddr = %q", got)
	}
}
