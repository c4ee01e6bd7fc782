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
	name   string
	query  string // "" when nothing is sent
	fixed  Role   // the role every node has when nothing is sent (tidb); Unknown for none
	status bool   // the query is SHOW STATUS: its answer is name/value rows (DecodeStatus)
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
	// Galera reads the node's wsrep status (MariaDB Galera Cluster, Percona XtraDB Cluster,
	// Galera Cluster for MySQL): a node serves only while wsrep_ready is ON, its component is
	// the primary one (wsrep_cluster_status Primary) and it is in step with the cluster
	// (wsrep_local_state 4, Synced); it is then a primary, since every Galera node takes
	// writes. Any other node — joining, joined but catching up, a donor or a node desynced on
	// purpose (wsrep_local_state 1, 3, 2), one cut off in a non-primary component — is a
	// standby and takes no new connection. This is the rule of MariaDB Connector/J's
	// galeraAllowedState (default "4": only Synced nodes are used; CONJ-595, CONJ-768) and of
	// ProxySQL's mysql_galera_hostgroups, which moves a node that is not Synced, or not in the
	// primary component, to its offline hostgroup. SHOW GLOBAL STATUS reads the variables on
	// MariaDB and MySQL-based servers alike and needs no privilege.
	Galera = Check{name: "galera", status: true, query: "SHOW GLOBAL STATUS WHERE Variable_name IN " +
		"('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state')"}
	// GroupReplication reads this member's row of MySQL Group Replication's
	// performance_schema.replication_group_members (MEMBER_ID = @@server_uuid; MEMBER_ROLE
	// needs MySQL 8.0.2 or later): an ONLINE PRIMARY is a primary, an ONLINE SECONDARY a
	// replica (single-primary mode, where secondaries run with super_read_only), and a member
	// in any other state (RECOVERING, OFFLINE, ERROR, UNREACHABLE) or with no row a standby that
	// takes no new connection, as MySQL Router and ProxySQL's mysql_group_replication_hostgroups
	// route only to ONLINE members. The query folds the row into one value, so that a missing
	// row is an answer too.
	GroupReplication = Check{name: "group-replication", query: "SELECT COALESCE(MAX(CONCAT(MEMBER_ROLE, ' ', MEMBER_STATE)), 'NONE NONE') " +
		"FROM performance_schema.replication_group_members WHERE MEMBER_ID = @@server_uuid"}
)

// GaleraSynced is wsrep_local_state of a Galera node in step with its cluster; 1 is Joining,
// 2 Donor/Desynced, 3 Joined (Galera's documentation, "Node State Changes").
const GaleraSynced = "4"

// galeraVariables are the status variables Galera's query reads; an answer must carry each.
var galeraVariables = []string{"wsrep_ready", "wsrep_cluster_status", "wsrep_local_state"}

// MaxStatusRows is the most name/value rows a status check's answer may hold; the query asks
// for fewer.
const MaxStatusRows = 8

// maxAnswer is the longest answer Decode reads; no role name or flag comes close.
const maxAnswer = 64

// ParseCheck reads roleCheck's value: none, mysql, oceanbase, tidb, galera or
// group-replication (in any case), or a custom SELECT that returns one row with one column
// holding a role name (primary, replica, standby) or a read_only flag (0 primary, 1 replica). Anything else is an error, so that a
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
	case "galera":
		return Galera, nil
	case "group-replication":
		return GroupReplication, nil
	}
	q := strings.TrimSpace(v)
	if len(q) > 7 && strings.EqualFold(q[:7], "SELECT ") && !strings.Contains(q, ";") {
		return Check{name: "custom", query: q}, nil
	}
	return Check{}, fmt.Errorf("roleCheck=%q: want none, mysql, oceanbase, tidb, galera, group-replication, or one SELECT statement (no ';') returning a role name or a read_only flag", clip(v))
}

// Name returns "none", "mysql", "oceanbase", "tidb", "galera", "group-replication" or "custom".
func (c Check) Name() string {
	if c.name == "" {
		return "none"
	}
	return c.name
}

// Query returns the SQL to send on the probe connection, or "" when the check sends nothing.
func (c Check) Query() string { return c.query }

// Finds reports whether the check can ever give a node role r: galera finds primaries and
// standbys only (every synced Galera node takes writes), oceanbase the same, mysql primaries
// and replicas, group-replication and a custom check all three; tidb's only role is Primary,
// none finds nothing.
func (c Check) Finds(r Role) bool {
	switch c.name {
	case "galera", "oceanbase":
		return r == Primary || r == Standby
	case "mysql":
		return r == Primary || r == Replica
	case "group-replication", "custom":
		return r == Primary || r == Replica || r == Standby
	case "tidb":
		return r == Primary
	}
	return false
}

// Fixed returns the role of every node when the check sends nothing: Primary for tidb,
// Unknown for none.
func (c Check) Fixed() Role { return c.fixed }

// Status reports whether the check's query is SHOW STATUS, answered with name/value rows
// (at most MaxStatusRows) for DecodeStatus; otherwise it answers one value for Decode.
func (c Check) Status() bool { return c.status }

// DecodeStatus reads the role from the status variables a status check's query returned,
// keyed by lower-case name (physical.NameValues). A variable the check needs and the answer lacks is an error
// (the server is not a Galera node); the caller keeps the node's previous role.
func (c Check) DecodeStatus(vars map[string]string) (Role, error) {
	if c.name != "galera" {
		return Unknown, fmt.Errorf("role check %s: does not read status variables", c.Name())
	}
	var v [3]string
	for i, name := range galeraVariables {
		value, ok := vars[name]
		if !ok {
			return Unknown, fmt.Errorf("role check galera: the server reports no %s: not a Galera node (wsrep_on=ON and a wsrep_provider are needed)", name)
		}
		v[i] = strings.TrimSpace(value)
	}
	if strings.EqualFold(v[0], "ON") && strings.EqualFold(v[1], "Primary") && v[2] == GaleraSynced {
		return Primary, nil
	}
	return Standby, nil
}

// Decode reads the role from the one value the check's query returned. An answer it cannot
// read is an error quoting (a short piece of) it; the caller keeps the node's previous role.
func (c Check) Decode(value string) (Role, error) {
	if len(value) > maxAnswer {
		return Unknown, fmt.Errorf("role check: a %d-byte answer (%q): want a role name or a read_only flag", len(value), clip(value))
	}
	v := strings.TrimSpace(value)
	if c.name == "group-replication" {
		role, state, ok := strings.Cut(strings.ToUpper(v), " ")
		switch {
		case !ok:
			return Unknown, fmt.Errorf("role check: answer %q: want a member role and state, such as \"PRIMARY ONLINE\"", clip(v))
		case state != "ONLINE":
			return Standby, nil
		case role == "PRIMARY":
			return Primary, nil
		case role == "SECONDARY":
			return Replica, nil
		}
		return Unknown, fmt.Errorf("role check: member role %q: want PRIMARY or SECONDARY", clip(role))
	}
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
