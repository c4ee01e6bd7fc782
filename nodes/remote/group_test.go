package remote

import (
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

func TestDecodeGroups(t *testing.T) {
	a, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(`{"code":200,"data":["10.0.0.1:1","10.0.0.2:1","10.0.0.3:1"],`+
		`"group":{"10.0.0.2:01":["reporting","analytics"],"10.0.0.3:1":["analytics"]}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"10.0.0.2:1": "analytics+reporting", "10.0.0.3:1": "analytics"}; !maps.Equal(a.groups, want) {
		t.Fatalf("answer groups %v, want %v", a.groups, want)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"unlisted":    {`{"code":200,"data":["10.0.0.1:1"],"group":{"10.0.0.2:1":["bi"]}}`, "which the answer does not list"},
		"upper case":  {`{"code":200,"data":["10.0.0.1:1"],"group":{"10.0.0.1:1":["BI"]}}`, `groups ["BI"] for "10.0.0.1:1" are not a list of 1 to 8 group names`},
		"joined":      {`{"code":200,"data":["10.0.0.1:1"],"group":{"10.0.0.1:1":["a+b"]}}`, `groups ["a+b"]`},
		"empty":       {`{"code":200,"data":["10.0.0.1:1"],"group":{"10.0.0.1:1":[]}}`, `groups [] for`},
		"not a list":  {`{"code":200,"data":["10.0.0.1:1"],"group":{"10.0.0.1:1":"bi"}}`, `groups "bi" for`},
		"twice":       {`{"code":200,"data":["10.0.0.1:1"],"group":{"10.0.0.1:1":["bi","bi"]}}`, `groups ["bi","bi"]`},
		"twice keyed": {`{"code":200,"data":["10.0.0.1:1"],"group":{"10.0.0.1:1":["a"],"10.0.0.1:01":["b"]}}`, "two group lists"},
	} {
		_, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(tc.body), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
	// Too many distinct sets of groups in one answer.
	var data, groups []string
	for i := range nodes.MaxGroupSets + 1 {
		a := "10.0.0." + string(rune('a'+i)) + "x.test:1"
		data = append(data, `"`+a+`"`)
		groups = append(groups, `"`+a+`":["g`+string(rune('a'+i))+`"]`)
	}
	body := `{"code":200,"data":[` + strings.Join(data, ",") + `],"group":{` + strings.Join(groups, ",") + `}}`
	if _, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(body), false); err == nil || !strings.Contains(err.Error(), "distinct sets of groups") {
		t.Errorf("too many sets: err = %v", err)
	}
}

// TestCacheGroupRoundTrip: save and load keep the groups; a file whose groups were altered
// into something no config-server sends is refused whole.
func TestCacheGroupRoundTrip(t *testing.T) {
	c := newDiskCache(t.TempDir(), "s", []server{{base: "http://cs:1"}})
	list := []string{"10.0.0.1:1", "10.0.0.2:1"}
	groups := map[string]string{"10.0.0.2:1": "analytics+reporting"}
	if err := c.save("default", nodes.ListMD5(list), list, nil, nil, nil, groups, time.Now()); err != nil {
		t.Fatal(err)
	}
	cf, path, err := c.load("default")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cf.Groups, groups) {
		t.Fatalf("loaded groups %v, want %v", cf.Groups, groups)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"name":     strings.Replace(string(data), `"analytics+reporting"`, `"Analytics"`, 1),
		"empty":    strings.Replace(string(data), `"analytics+reporting"`, `""`, 1),
		"unlisted": strings.Replace(string(data), `"10.0.0.2:1": "analytics`, `"10.0.0.9:1": "analytics`, 1),
	} {
		if bad == string(data) {
			t.Fatalf("%s: the replacement did not apply to\n%s", name, data)
		}
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.load("default"); err == nil || !strings.Contains(err.Error(), "holds groups") {
			t.Errorf("%s: load = %v, want an error about the groups", name, err)
		}
	}
}

// The source hands the groups on with the nodes.
func TestVariantNodesCarryGroups(t *testing.T) {
	v := &variant{list: []string{"10.0.0.1:1", "10.0.0.2:1"}, groups: map[string]string{"10.0.0.2:1": "analytics"}}
	got := v.nodes(false)
	if got[0].Groups != "" || got[1].Groups != "analytics" {
		t.Fatalf("nodes %v", got)
	}
}
