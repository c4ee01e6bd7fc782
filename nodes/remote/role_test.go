package remote

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

func TestDecodeRolesRefusesBadAnswers(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unlisted": {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.2:1":"primary"}}`, "which the answer does not list"},
		"name":     {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":"writer"}}`, `role "writer" for "10.0.0.1:1" is not "primary", "replica" or "standby"`},
		"empty":    {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":""}}`, `role "" for`},
		"number":   {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":1}}`, `role 1 for`},
		"bad key":  {`{"code":200,"data":["10.0.0.1:1"],"role":{"x":"primary"}}`, `role for "x"`},
		"twice":    {`{"code":200,"data":["10.0.0.1:1"],"role":{"10.0.0.1:1":"primary","10.0.0.1:01":"replica"}}`, "two roles"},
	} {
		_, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(tc.body), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tc.want)
		}
	}
	a, err := decodeAnswer(server{name: "cs:1"}, 200, []byte(`{"code":200,"data":["10.0.0.1:1","10.0.0.2:1"],"role":{"10.0.0.2:01":"Standby"}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.roles) != 1 || a.roles["10.0.0.2:1"] != nodes.RoleStandby {
		t.Fatalf("answer roles %v, want only 10.0.0.2:1 standby", a.roles)
	}
}

// TestCacheRoleRoundTrip: save and load keep the roles; a cache file whose roles were altered
// into something no config-server sends is refused whole.
func TestCacheRoleRoundTrip(t *testing.T) {
	c := newDiskCache(t.TempDir(), "s", []server{{base: "http://cs:1"}})
	list := []string{"10.0.0.1:1", "10.0.0.2:1"}
	roles := map[string]nodes.Role{"10.0.0.1:1": nodes.RolePrimary, "10.0.0.2:1": nodes.RoleStandby}
	if err := c.save("default", nodes.ListMD5(list), list, nil, roles, nil, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	cf, path, err := c.load("default")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.roles) != 2 || cf.roles["10.0.0.1:1"] != nodes.RolePrimary || cf.roles["10.0.0.2:1"] != nodes.RoleStandby {
		t.Fatalf("loaded roles %v, want %v", cf.roles, roles)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"name":     strings.Replace(string(data), `"standby"`, `"writer"`, 1),
		"unknown":  strings.Replace(string(data), `"standby"`, `"unknown"`, 1),
		"unlisted": strings.Replace(string(data), `"10.0.0.2:1": "standby"`, `"10.0.0.9:1": "standby"`, 1),
	} {
		if bad == string(data) {
			t.Fatalf("%s: the replacement did not apply to\n%s", name, data)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(path), filepath.Base(path)), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.load("default"); err == nil || !strings.Contains(err.Error(), "holds a role") {
			t.Errorf("%s: load = %v, want an error about the role", name, err)
		}
	}
}

func TestCacheZoneRoundTrip(t *testing.T) {
	c := newDiskCache(t.TempDir(), "s", []server{{base: "http://cs:1"}})
	list := []string{"10.0.0.1:1", "10.0.0.2:1"}
	zones := map[string]string{"10.0.0.1:1": "az1", "10.0.0.2:1": "az2"}
	if err := c.save("default", nodes.ListMD5(list), list, nil, nil, zones, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	cf, path, err := c.load("default")
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cf.Zones, zones) {
		t.Fatalf("loaded zones %v, want %v", cf.Zones, zones)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"name":     strings.Replace(string(data), `"az2"`, `"az 2"`, 1),
		"unlisted": strings.Replace(string(data), `"10.0.0.2:1": "az2"`, `"10.0.0.9:1": "az2"`, 1),
	} {
		if bad == string(data) {
			t.Fatalf("%s: the replacement did not apply to\n%s", name, data)
		}
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.load("default"); err == nil || !strings.Contains(err.Error(), "holds a zone") {
			t.Errorf("%s: load = %v, want an error about the zone", name, err)
		}
	}
}
