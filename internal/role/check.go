package role

import (
	"fmt"
	"strings"

	"github.com/lbd-go/lbd/nodes"
)

// Check is one way of finding a node's role: the query the prober sends on the probe
// connection after its health query, and how the answer reads. The zero Check (none) sends
// nothing and leaves roles to the node source.
type Check struct {
	name  string
	query string // "" when nothing is sent
	fixed Role   // the role every node has when nothing is sent (tidb); Unknown for none
}

// The built-in checks, by the names roleCheck takes.
var (
	// None checks nothing: roles come from the node source, or stay unknown.
	None = Check{name: "none"}
	// MySQL reads @@global.read_only: 0 is a primary, 1 a replica. It serves MySQL and MariaDB
	// alike; with super_read_only=ON, MySQL turns read_only on as well, so one variable tells
	// both (MySQL Reference Manual, "super_read_only"; MariaDB has read_only only).
	MySQL = Check{name: "mysql", query: "SELECT @@global.read_only"}
	// OceanBase reads the tenant's role from oceanbase.DBA_OB_TENANTS, which shows a user
	// tenant its own row (OceanBase 4.x): PRIMARY is a primary, STANDBY (and RESTORE, a
	// tenant being restored) a standby.
	OceanBase = Check{name: "oceanbase", query: "SELECT TENANT_ROLE FROM oceanbase.DBA_OB_TENANTS"}
	// TiDB sends nothing: every TiDB server of a cluster takes writes, so every node is a
	// primary.
	TiDB = Check{name: "tidb", fixed: Primary}
)

// maxAnswer is the longest answer Decode reads; no role name or flag comes close.
const maxAnswer = 64

// ParseCheck reads roleCheck's value: none, mysql, oceanbase or tidb (in any case), or a
// custom SELECT that returns one row with one column holding a role name (primary, replica,
// standby) or a read_only flag (0 primary, 1 replica). Anything else is an error, so that a
// mistyped name is never sent to the servers as SQL.
func ParseCheck(v string) (Check, error) {
	switch strings.ToLower(v) {
	case "", "none":
		return None, nil
	case "mysql":
		return MySQL, nil
	case "oceanbase":
		return OceanBase, nil
	case "tidb":
		return TiDB, nil
	}
	q := strings.TrimSpace(v)
	if len(q) > 7 && strings.EqualFold(q[:7], "SELECT ") && !strings.Contains(q, ";") {
		return Check{name: "custom", query: q}, nil
	}
	return Check{}, fmt.Errorf("roleCheck=%q: want none, mysql, oceanbase, tidb, or one SELECT statement (no ';') returning a role name or a read_only flag", clip(v))
}

// Name returns "none", "mysql", "oceanbase", "tidb" or "custom".
func (c Check) Name() string {
	if c.name == "" {
		return "none"
	}
	return c.name
}

// Query returns the SQL to send on the probe connection, or "" when the check sends nothing.
func (c Check) Query() string { return c.query }

// Fixed returns the role of every node when the check sends nothing: Primary for tidb,
// Unknown for none.
func (c Check) Fixed() Role { return c.fixed }

// Decode reads the role from the one value the check's query returned. An answer it cannot
// read is an error quoting (a short piece of) it; the caller keeps the node's previous role.
func (c Check) Decode(value string) (Role, error) {
	if len(value) > maxAnswer {
		return Unknown, fmt.Errorf("role check: a %d-byte answer (%q): want a role name or a read_only flag", len(value), clip(value))
	}
	v := strings.TrimSpace(value)
	if c.name == "oceanbase" {
		switch strings.ToUpper(v) {
		case "PRIMARY":
			return Primary, nil
		case "STANDBY", "RESTORE":
			return Standby, nil
		}
		return Unknown, fmt.Errorf("role check: tenant role %q: want PRIMARY or STANDBY", clip(v))
	}
	switch v {
	case "0", "OFF", "off":
		return Primary, nil
	case "1", "ON", "on":
		return Replica, nil
	}
	if c.name == "custom" {
		if r, err := nodes.ParseRole(v); err == nil && r != Unknown {
			return r, nil
		}
		return Unknown, fmt.Errorf("role check: answer %q: want primary, replica, standby, 0 or 1", clip(v))
	}
	return Unknown, fmt.Errorf("role check: read_only is %q: want 0 or 1", clip(v))
}
