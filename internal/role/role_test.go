package role

import (
	"strings"
	"testing"
)

func TestParseCheck(t *testing.T) {
	for _, tc := range []struct {
		in, name, query string
		fixed           Role
	}{
		{"", "none", "", Unknown},
		{"none", "none", "", Unknown},
		{"MySQL", "mysql", "SELECT @@global.read_only", Unknown},
		{"oceanbase", "oceanbase", "SELECT TENANT_ROLE FROM oceanbase.DBA_OB_TENANTS", Unknown},
		{"tidb", "tidb", "", Primary},
		{"Galera", "galera", Galera.query, Unknown},
		{"group-replication", "group-replication", GroupReplication.query, Unknown},
		{"  select role from meta.whoami  ", "custom", "select role from meta.whoami", Unknown},
	} {
		c, err := ParseCheck(tc.in)
		if err != nil || c.Name() != tc.name || c.Query() != tc.query || c.Fixed() != tc.fixed {
			t.Errorf("ParseCheck(%q) = %s %q %v, %v; want %s %q %v", tc.in, c.Name(), c.Query(), c.Fixed(), err, tc.name, tc.query, tc.fixed)
		}
	}
	for _, bad := range []string{"mysq", "ocean base", "group_replication", "galera4", "SELECT", "SELECT 1; DROP TABLE t", "UPDATE t SET x=1", "show variables"} {
		if _, err := ParseCheck(bad); err == nil || !strings.Contains(err.Error(), "want none, mysql, oceanbase, tidb") {
			t.Errorf("ParseCheck(%q) = %v, want an error naming the choices", bad, err)
		}
	}
	if (Check{}).Name() != "none" {
		t.Error("the zero Check is not none")
	}
}

func TestDecode(t *testing.T) {
	custom, _ := ParseCheck("SELECT role FROM meta.whoami")
	for _, tc := range []struct {
		check Check
		value string
		want  Role
	}{
		{MySQL, "0", Primary},
		{MySQL, "1", Replica},
		{MySQL, " 1 ", Replica},
		{OceanBase, "PRIMARY", Primary},
		{OceanBase, "standby", Standby},
		{OceanBase, "RESTORE", Standby},
		{custom, "replica", Replica},
		{custom, "PRIMARY", Primary},
		{custom, "1", Replica},
		{custom, "0", Primary},
		{GroupReplication, "PRIMARY ONLINE", Primary},
		{GroupReplication, "SECONDARY ONLINE", Replica},
		{GroupReplication, " secondary online ", Replica},
		{GroupReplication, "SECONDARY RECOVERING", Standby},
		{GroupReplication, "PRIMARY RECOVERING", Standby},
		{GroupReplication, "SECONDARY OFFLINE", Standby},
		{GroupReplication, "PRIMARY ERROR", Standby},
		{GroupReplication, "SECONDARY UNREACHABLE", Standby},
		{GroupReplication, "NONE NONE", Standby}, // no row for this member
	} {
		if got, err := tc.check.Decode(tc.value); err != nil || got != tc.want {
			t.Errorf("%s.Decode(%q) = %v, %v; want %v", tc.check.Name(), tc.value, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		check Check
		value string
	}{
		{MySQL, "2"}, {MySQL, ""}, {MySQL, "primary"}, {OceanBase, "1"}, {OceanBase, ""},
		{custom, "leader"}, {custom, ""}, {GroupReplication, "LEADER ONLINE"}, {GroupReplication, "ONLINE"}, {GroupReplication, ""},
		{GroupReplication, strings.Repeat("x", 100)}, {custom, strings.Repeat("\xff", 1<<20)},
	} {
		r, err := tc.check.Decode(tc.value)
		if err == nil || r != Unknown || len(err.Error()) > 300 {
			t.Errorf("%s.Decode(%.20q) = %v, %v; want Unknown and a short error", tc.check.Name(), tc.value, r, err)
		}
	}
}

// TestDecodeStatus: a Galera node is a primary only while ready, in the primary component and
// Synced; otherwise a standby; an answer without the variables is an error.
func TestDecodeStatus(t *testing.T) {
	synced := func(edit func(v map[string]string)) map[string]string {
		v := map[string]string{"wsrep_ready": "ON", "wsrep_cluster_status": "Primary", "wsrep_local_state": "4"}
		if edit != nil {
			edit(v)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		vars map[string]string
		want Role
	}{
		{"synced", synced(nil), Primary},
		{"synced, other spelling", synced(func(v map[string]string) { v["wsrep_ready"], v["wsrep_cluster_status"] = "on", " PRIMARY " }), Primary},
		{"joining", synced(func(v map[string]string) { v["wsrep_local_state"] = "1" }), Standby},
		{"donor or desynced", synced(func(v map[string]string) { v["wsrep_local_state"] = "2" }), Standby},
		{"joined", synced(func(v map[string]string) { v["wsrep_local_state"] = "3" }), Standby},
		{"not ready", synced(func(v map[string]string) { v["wsrep_ready"] = "OFF" }), Standby},
		{"non-primary component", synced(func(v map[string]string) { v["wsrep_cluster_status"] = "non-Primary" }), Standby},
		{"disconnected", synced(func(v map[string]string) { v["wsrep_cluster_status"] = "Disconnected" }), Standby},
		{"extra variables", synced(func(v map[string]string) { v["wsrep_local_index"] = "0" }), Primary},
	} {
		if got, err := Galera.DecodeStatus(tc.vars); err != nil || got != tc.want {
			t.Errorf("%s: DecodeStatus(%v) = %v, %v; want %v", tc.name, tc.vars, got, err, tc.want)
		}
	}
	for _, name := range galeraVariables {
		v := synced(func(v map[string]string) { delete(v, name) })
		if r, err := Galera.DecodeStatus(v); err == nil || r != Unknown || !strings.Contains(err.Error(), name) {
			t.Errorf("without %s: DecodeStatus = %v, %v; want Unknown and an error naming it", name, r, err)
		}
	}
	if !Galera.Status() || GroupReplication.Status() || MySQL.Status() {
		t.Error("Status: only galera reads status rows")
	}
	if _, err := MySQL.DecodeStatus(synced(nil)); err == nil {
		t.Error("mysql decoded status rows")
	}
}

// TestFinds: the roles each check can give; what checkRoleSources refuses targets by.
func TestFinds(t *testing.T) {
	custom, _ := ParseCheck("SELECT role FROM meta.whoami")
	for _, tc := range []struct {
		check Check
		finds Set
	}{
		{None, 0},
		{MySQL, Of(Primary, Replica)},
		{OceanBase, Of(Primary, Standby)},
		{TiDB, Of(Primary)},
		{Galera, Of(Primary, Standby)},
		{GroupReplication, Of(Primary, Replica, Standby)},
		{custom, Of(Primary, Replica, Standby)},
	} {
		for r := Unknown; r <= Standby; r++ {
			if got := tc.check.Finds(r); got != tc.finds.Has(r) {
				t.Errorf("%s.Finds(%v) = %v", tc.check.Name(), r, got)
			}
		}
	}
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		in            string
		want          Target
		first, second Set
	}{
		{"", Any, Of(Unknown, Primary, Replica), 0},
		{"any", Any, Of(Unknown, Primary, Replica), 0},
		{"PRIMARY", PrimaryOnly, Of(Primary), 0},
		{"prefer-primary", PreferPrimary, Of(Primary), Of(Replica, Unknown)},
		{"replica", ReplicaOnly, Of(Replica), 0},
		{"Prefer-Replica", PreferReplica, Of(Replica), Of(Primary, Unknown)},
	} {
		got, err := ParseTarget(tc.in)
		if err != nil || got != tc.want {
			t.Fatalf("ParseTarget(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		first, second := got.Tiers()
		if first != tc.first || second != tc.second {
			t.Errorf("%v tiers = %08b, %08b; want %08b, %08b", got, first, second, tc.first, tc.second)
		}
		if got.Accepts(Standby) {
			t.Errorf("%v accepts a standby", got)
		}
		if tc.in != "" && got.String() != strings.ToLower(tc.in) {
			t.Errorf("%v prints as %q", tc.in, got.String())
		}
	}
	if !PreferReplica.Accepts(Primary) || ReplicaOnly.Accepts(Primary) || PrimaryOnly.Accepts(Unknown) {
		t.Error("Accepts disagrees with the tiers")
	}
	for _, bad := range []string{"master", "read-write", "primary,replica"} {
		if _, err := ParseTarget(bad); err == nil || !strings.Contains(err.Error(), "want any, primary") {
			t.Errorf("ParseTarget(%q) = %v, want an error naming the targets", bad, err)
		}
	}
}
