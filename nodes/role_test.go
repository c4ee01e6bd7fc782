package nodes

import (
	"strings"
	"testing"
)

func TestParseRole(t *testing.T) {
	for in, want := range map[string]Role{"": RoleUnknown, "primary": RolePrimary, "REPLICA": RoleReplica, "Standby": RoleStandby} {
		if got, err := ParseRole(in); err != nil || got != want {
			t.Errorf("ParseRole(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"master", "slave", "primary ", strings.Repeat("x", 500)} {
		_, err := ParseRole(bad)
		if err == nil || !strings.Contains(err.Error(), "want primary, replica or standby") || len(err.Error()) > 200 {
			t.Errorf("ParseRole(%.20q) = %v, want a short error naming the roles", bad, err)
		}
	}
	if RoleUnknown.String() != "unknown" || RoleStandby.String() != "standby" || Role(9).String() != "unknown" {
		t.Error("String misnames a role")
	}
}
