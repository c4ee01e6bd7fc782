package lbdtest

import (
	"bytes"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Role is the part a proxy plays for the database behind it. Every proxy of a Cluster relays to
// the same backend; the role is the relay's act, which is enough to test a client's routing:
//
//   - Primary (the default) relays everything.
//   - Replica acts as a MySQL or MariaDB server running with read_only=ON: writes are refused
//     with error 1290 (ER_OPTION_PREVENTS_STATEMENT, SQLSTATE HY000), reads are relayed.
//   - Standby acts as an OceanBase standby tenant: writes are refused with error 4782
//     (OB_NOT_PRIMARY_TENANT, the code OceanBase's proxy ODP takes as "switched over; retry on
//     the other tenant"), reads are relayed.
//
// The role also answers the role checks a client may send:
//
//   - @@global.read_only, @@read_only, @@global.super_read_only and @@super_read_only, wherever
//     they appear in a query, read 1 on a replica or standby and 0 on a primary (the relay puts
//     the literal in their place, so a column named after the variable is named "1" or "0");
//   - a query that names DBA_OB_TENANTS (OceanBase 4.x shows a user tenant its own row there)
//     is answered with one row and one column, TENANT_ROLE: "PRIMARY" on a primary or replica,
//     "STANDBY" on a standby.
//   - SHOW [GLOBAL | SESSION] STATUS, when the statement names a wsrep_ variable, reads the
//     Galera status of a node: on a primary or replica a Synced node of the primary component
//     (wsrep_ready ON, wsrep_cluster_status Primary, wsrep_local_state 4), on a standby a
//     donor (wsrep_local_state 2, Donor/Desynced). LIKE 'pattern' filters the rows as a
//     server does; a WHERE clause keeps the variables it names in quotes (Variable_name IN
//     ('wsrep_ready', ...)).
//   - a query that names replication_group_members (MySQL Group Replication's table in
//     performance_schema) is answered with one row and one column, this member's MEMBER_ROLE
//     and MEMBER_STATE joined by a space (the shape of lbd's check): "PRIMARY ONLINE" on a
//     primary, "SECONDARY ONLINE" on a replica, "SECONDARY RECOVERING" on a standby.
//
// A write is a statement whose first keyword, after comments, is one of INSERT, UPDATE, DELETE,
// REPLACE, CREATE, DROP, ALTER, TRUNCATE, RENAME, LOAD, GRANT or REVOKE. A prepared write is
// refused when it is prepared (MySQL refuses it when it is executed). Statements that change
// nothing (SELECT, SET, BEGIN, COMMIT, SHOW, ...) are relayed in every role.
type Role int32

const (
	// Primary accepts reads and writes.
	Primary Role = iota
	// Replica is read-only: writes get error 1290.
	Replica
	// Standby is an OceanBase standby tenant: writes get error 4782.
	Standby
)

// String returns "primary", "replica" or "standby".
func (r Role) String() string {
	switch r {
	case Primary:
		return "primary"
	case Replica:
		return "replica"
	case Standby:
		return "standby"
	}
	return "unknown"
}

// The errors a proxy's role refuses a write with.
var (
	// ErrReadOnly is MySQL's and MariaDB's answer to a write on a read-only server.
	ErrReadOnly = mysql.MySQLError{Number: 1290, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: "The MySQL server is running with the --read-only option so it cannot execute this statement"}
	// ErrNotPrimaryTenant is OceanBase's answer to a statement a standby tenant cannot run.
	ErrNotPrimaryTenant = mysql.MySQLError{Number: 4782, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: "The tenant is not primary"}
)

// SetRole gives the proxy role r, for statements read after the call. Connections stay open:
// a real server changing its role keeps its sessions too.
func (p *Proxy) SetRole(r Role) {
	p.role.Store(int32(r))
	p.log.Debug("lbdtest: proxy role set", "proxy", p.addr, "role", r.String())
}

// Role returns the proxy's role (Primary unless SetRole said otherwise).
func (p *Proxy) Role() Role { return Role(p.role.Load()) }

// SetReplicationLag makes a proxy in the Replica role answer SHOW REPLICA STATUS and SHOW SLAVE
// STATUS with one row whose Seconds_Behind_Source column reads d in whole seconds (rounded
// down), as a replica that far behind its primary does; a negative d reads NULL, as a replica
// whose replication is stopped. Proxies in other roles, and every proxy before the first call,
// relay the statement to the backend. ClearReplicationLag undoes it.
func (p *Proxy) SetReplicationLag(d time.Duration) {
	p.lag.Store(&d)
}

// ClearReplicationLag undoes SetReplicationLag: the replica status is relayed again.
func (p *Proxy) ClearReplicationLag() { p.lag.Store(nil) }

// replicaStatusAnswer is the replica status of a proxy in role r whose lag SetReplicationLag set,
// as a SELECT the in-memory backend answers without its engine (NULL through it); nil for any
// other statement or proxy.
func (p *Proxy) replicaStatusAnswer(r Role, sql []byte) []byte {
	lag := p.lag.Load()
	if lag == nil || r != Replica {
		return nil
	}
	word, rest := nextWord(sql)
	if !bytes.EqualFold(word, []byte("SHOW")) {
		return nil
	}
	word, rest = nextWord(rest)
	if !bytes.EqualFold(word, []byte("REPLICA")) && !bytes.EqualFold(word, []byte("SLAVE")) {
		return nil
	}
	if word, _ = nextWord(rest); !bytes.EqualFold(word, []byte("STATUS")) {
		return nil
	}
	if *lag < 0 {
		return []byte("SELECT NULL AS Seconds_Behind_Source")
	}
	return []byte("SELECT " + strconv.FormatInt(int64(*lag/time.Second), 10) + " AS Seconds_Behind_Source")
}

// Refused returns how many statements the proxy refused because of its role.
func (p *Proxy) Refused() int64 { return p.refused.Load() }

// Switchover moves the primary role from the proxies in from to those in to, as a database
// switchover or failover does: each proxy in from takes the role the proxies in to had (the
// role of to[0]), then, after gap, the proxies in to become Primary. During the gap no proxy of
// the two groups is primary; Switchover blocks for it. A gap of 0 flips both groups at once.
func Switchover(from, to []*Proxy, gap time.Duration) {
	demoted := Standby
	if len(to) > 0 {
		demoted = to[0].Role()
	}
	for _, p := range from {
		p.SetRole(demoted)
	}
	if gap > 0 {
		time.Sleep(gap) // the window with no primary is what the caller asked for
	}
	for _, p := range to {
		p.SetRole(Primary)
	}
}

// roleAnswer is what the relay does with one statement under role r: forward it unchanged
// (nil, nil), forward rewritten text (text), or refuse it (refuse).
func roleAnswer(r Role, cmd int, sql []byte) (text []byte, refuse *mysql.MySQLError) {
	if r != Primary && isWrite(sql) {
		if r == Standby {
			return nil, &ErrNotPrimaryTenant
		}
		return nil, &ErrReadOnly
	}
	if cmd != comQuery {
		return nil, nil
	}
	return roleCheckAnswer(r, sql), nil
}

// writeKeywords are the first keywords of the statements a read-only server refuses.
var writeKeywords = []string{"INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER",
	"TRUNCATE", "RENAME", "LOAD", "GRANT", "REVOKE"}

// isWrite reports whether sql's first keyword, after spaces and comments, starts a write.
func isWrite(sql []byte) bool {
	word := firstKeyword(sql)
	for _, k := range writeKeywords {
		if len(word) == len(k) && bytes.EqualFold(word, []byte(k)) {
			return true
		}
	}
	return false
}

// firstKeyword returns the first word of sql after white space, /* */ comments and "-- " or
// "#" line comments; nil when there is none.
func firstKeyword(sql []byte) []byte {
	for len(sql) > 0 {
		switch {
		case sql[0] == ' ' || sql[0] == '\t' || sql[0] == '\n' || sql[0] == '\r' || sql[0] == '(':
			sql = sql[1:]
		case bytes.HasPrefix(sql, []byte("/*")):
			end := bytes.Index(sql[2:], []byte("*/"))
			if end < 0 {
				return nil
			}
			sql = sql[2+end+2:]
		case sql[0] == '#' || bytes.HasPrefix(sql, []byte("-- ")):
			end := bytes.IndexByte(sql, '\n')
			if end < 0 {
				return nil
			}
			sql = sql[end+1:]
		default:
			n := 0
			for n < len(sql) && (sql[n] >= 'a' && sql[n] <= 'z' || sql[n] >= 'A' && sql[n] <= 'Z') {
				n++
			}
			return sql[:n]
		}
	}
	return nil
}

// readOnlyVariables are the role-check variables a proxy answers for itself; none of them is
// part of another.
var readOnlyVariables = [][]byte{
	[]byte("@@global.super_read_only"), []byte("@@global.read_only"),
	[]byte("@@super_read_only"), []byte("@@read_only"),
}

// roleCheckAnswer returns the text to send instead of sql when sql is a role check, or nil.
func roleCheckAnswer(r Role, sql []byte) []byte {
	if out := galeraStatusAnswer(r, sql); out != nil {
		return out
	}
	if out := groupMemberAnswer(r, sql); out != nil {
		return out
	}
	if indexFold(sql, []byte("DBA_OB_TENANTS")) >= 0 {
		role := "PRIMARY"
		if r == Standby {
			role = "STANDBY"
		}
		return []byte("SELECT '" + role + "' AS TENANT_ROLE")
	}
	if bytes.IndexByte(sql, '@') < 0 {
		return nil
	}
	flag := []byte("0")
	if r != Primary {
		flag = []byte("1")
	}
	out, changed := sql, false
	for _, v := range readOnlyVariables {
		if i := indexFold(out, v); i >= 0 {
			var b []byte
			for i >= 0 {
				b = append(b, out[:i]...)
				b = append(b, flag...)
				out = out[i+len(v):]
				i = indexFold(out, v)
			}
			out = append(b, out...)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return out
}

// galeraStatusAnswer answers a SHOW STATUS that names a wsrep_ variable with the status rows of
// a Galera node in role r, filtered by its LIKE or WHERE clause, as a SELECT of literals (which
// the in-memory backend answers without its engine, as it answers the other role checks); nil
// for any other statement.
func galeraStatusAnswer(r Role, sql []byte) []byte {
	if indexFold(sql, []byte("wsrep_")) < 0 {
		return nil
	}
	word, rest := nextWord(sql)
	if !bytes.EqualFold(word, []byte("SHOW")) {
		return nil
	}
	if word, rest = nextWord(rest); bytes.EqualFold(word, []byte("GLOBAL")) || bytes.EqualFold(word, []byte("SESSION")) {
		word, rest = nextWord(rest)
	}
	if !bytes.EqualFold(word, []byte("STATUS")) {
		return nil
	}
	state, comment := "4", "Synced"
	if r == Standby {
		state, comment = "2", "Donor/Desynced"
	}
	rows := [][2]string{{"wsrep_ready", "ON"}, {"wsrep_cluster_status", "Primary"}, {"wsrep_cluster_size", "3"},
		{"wsrep_local_state", state}, {"wsrep_local_state_comment", comment}}
	keep := func(name string) bool { return true }
	switch word, tail := nextWord(rest); {
	case bytes.EqualFold(word, []byte("LIKE")):
		pattern := quoted(tail)
		keep = func(name string) bool { return likeFold(name, pattern) }
	case bytes.EqualFold(word, []byte("WHERE")):
		// The rows the clause names, as Variable_name = 'x' or IN ('x', 'y') do.
		keep = func(name string) bool { return indexFold(tail, []byte("'"+name+"'")) >= 0 }
	}
	var out []byte
	for _, row := range rows {
		if !keep(row[0]) {
			continue
		}
		if out == nil {
			out = []byte("SELECT '" + row[0] + "' AS Variable_name, '" + row[1] + "' AS Value")
		} else {
			out = append(out, " UNION ALL SELECT '"+row[0]+"', '"+row[1]+"'"...)
		}
	}
	if out == nil {
		return []byte("SELECT * FROM (SELECT 'wsrep_ready' AS Variable_name, 'ON' AS Value) AS status WHERE 1 = 0")
	}
	return out
}

// quoted returns the text of the first single-quoted string in s ("" when there is none).
func quoted(s []byte) string {
	i := bytes.IndexByte(s, '\'')
	if i < 0 {
		return ""
	}
	j := bytes.IndexByte(s[i+1:], '\'')
	if j < 0 {
		return ""
	}
	return string(s[i+1 : i+1+j])
}

// likeFold reports whether s matches the SQL LIKE pattern p ('%' any run, '_' any one
// character), ignoring ASCII case.
func likeFold(s, p string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '%':
		for i := 0; i <= len(s); i++ {
			if likeFold(s[i:], p[1:]) {
				return true
			}
		}
		return false
	case '_':
		return s != "" && likeFold(s[1:], p[1:])
	}
	return s != "" && bytes.EqualFold([]byte{s[0]}, []byte{p[0]}) && likeFold(s[1:], p[1:])
}

// nextWord returns the first word of s after white space and comments (see firstKeyword) and
// what follows it.
func nextWord(s []byte) (word, rest []byte) {
	word = firstKeyword(s)
	if word == nil {
		return nil, nil
	}
	end := cap(s) - cap(word) + len(word) // word is a piece of s: its end's offset in s
	return word, s[end:]
}

// groupMemberAnswer answers a query that names replication_group_members (MySQL Group
// Replication's performance_schema table) with one row and one column: this member's
// MEMBER_ROLE and MEMBER_STATE joined by a space, as lbd's roleCheck=group-replication folds
// them; nil for any other query.
func groupMemberAnswer(r Role, sql []byte) []byte {
	if indexFold(sql, []byte("replication_group_members")) < 0 {
		return nil
	}
	member := "PRIMARY ONLINE"
	switch r {
	case Replica:
		member = "SECONDARY ONLINE"
	case Standby:
		member = "SECONDARY RECOVERING"
	}
	return []byte("SELECT '" + member + "' AS MEMBER")
}

// indexFold returns the index of the first case-insensitive occurrence of sub (ASCII) in s, or -1.
func indexFold(s, sub []byte) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if bytes.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// queryPacket returns a COM_QUERY packet with sequence id 0 carrying text.
func queryPacket(text []byte) []byte {
	n := 1 + len(text)
	b := make([]byte, 0, headerLen+n)
	b = append(b, byte(n), byte(n>>8), byte(n>>16), 0, comQuery)
	return append(b, text...)
}
