package lbdtest

import (
	"bytes"
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
//     donor (wsrep_local_state 2, Donor/Desynced). Its LIKE or WHERE clause filters the rows
//     as a server's does.
//   - performance_schema.replication_group_members, wherever a query names it, is MySQL Group
//     Replication's table holding this member's row, and @@server_uuid its MEMBER_ID: MEMBER_ROLE
//     PRIMARY and MEMBER_STATE ONLINE on a primary, SECONDARY and ONLINE on a replica, SECONDARY
//     and RECOVERING on a standby.
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

// galeraStatusAnswer rewrites a SHOW STATUS that names a wsrep_ variable into a SELECT over the
// status rows of a Galera node in role r, keeping its LIKE or WHERE clause; nil for any other
// statement.
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
	out := []byte("SELECT * FROM (SELECT 'wsrep_ready' AS Variable_name, 'ON' AS Value" +
		" UNION ALL SELECT 'wsrep_cluster_status', 'Primary'" +
		" UNION ALL SELECT 'wsrep_cluster_size', '3'" +
		" UNION ALL SELECT 'wsrep_local_state', '" + state + "'" +
		" UNION ALL SELECT 'wsrep_local_state_comment', '" + comment + "') AS status ")
	if word, _ := nextWord(rest); bytes.EqualFold(word, []byte("LIKE")) {
		out = append(out, "WHERE Variable_name"...)
	}
	return append(out, rest...)
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

// groupMemberAnswer rewrites a query naming performance_schema.replication_group_members so
// that the table holds the one row of a Group Replication member in role r, and @@server_uuid
// is its MEMBER_ID; nil for any other query.
func groupMemberAnswer(r Role, sql []byte) []byte {
	const table = "replication_group_members"
	i := indexFold(sql, []byte(table))
	if i < 0 {
		return nil
	}
	const id = "'00000000-0000-0000-0000-00000000001b'"
	memberRole, state := "PRIMARY", "ONLINE"
	switch r {
	case Replica:
		memberRole = "SECONDARY"
	case Standby:
		memberRole, state = "SECONDARY", "RECOVERING"
	}
	start := i
	if schema := "performance_schema."; i >= len(schema) && bytes.EqualFold(sql[i-len(schema):i], []byte(schema)) {
		start = i - len(schema)
	}
	out := append([]byte{}, sql[:start]...)
	out = append(out, "(SELECT 'group_replication_applier' AS CHANNEL_NAME, "+id+" AS MEMBER_ID, '"+
		state+"' AS MEMBER_STATE, '"+memberRole+"' AS MEMBER_ROLE) AS "+table...)
	out = append(out, sql[i+len(table):]...)
	for _, v := range [][]byte{[]byte("@@global.server_uuid"), []byte("@@server_uuid")} {
		for j := indexFold(out, v); j >= 0; j = indexFold(out, v) {
			out = append(out[:j:j], append([]byte(id), out[j+len(v):]...)...)
		}
	}
	return out
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
