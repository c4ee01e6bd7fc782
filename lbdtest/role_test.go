package lbdtest

import (
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlErrNumber returns the MySQL error number in err, or 0.
func mysqlErrNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// readOnlyFlag runs MySQL's role check through db.
func readOnlyFlag(t *testing.T, db *sql.DB) int {
	t.Helper()
	var ro int
	if err := db.QueryRow("SELECT @@global.read_only").Scan(&ro); err != nil {
		t.Fatalf("role check: %v", err)
	}
	return ro
}

// tenantRole runs OceanBase's role check through db.
func tenantRole(t *testing.T, db *sql.DB) string {
	t.Helper()
	var role string
	if err := db.QueryRow("SELECT TENANT_ROLE FROM oceanbase.DBA_OB_TENANTS").Scan(&role); err != nil {
		t.Fatalf("tenant role check: %v", err)
	}
	return role
}

// Each role relays reads, refuses writes with its own error, answers the role checks for
// itself, and changes for open connections at once.
func TestRoles(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	db.SetMaxOpenConns(1) // one connection throughout: the role changes under an open session
	table := tableName("lbd_roles")
	if _, err := db.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	dropTable(t, db, table) // runs after the role is back to primary (cleanups run last first)
	t.Cleanup(func() { p.SetRole(Primary) })

	for _, tc := range []struct {
		role     Role
		writeErr uint16 // 0: writes pass
		readOnly int
		tenant   string
	}{
		{Primary, 0, 0, "PRIMARY"},
		{Replica, 1290, 1, "PRIMARY"},
		{Standby, 4782, 1, "STANDBY"},
		{Primary, 0, 0, "PRIMARY"},
	} {
		p.SetRole(tc.role)
		if p.Role() != tc.role {
			t.Fatalf("Role() = %v after SetRole(%v)", p.Role(), tc.role)
		}
		refused := p.Refused()
		for _, write := range []string{
			"INSERT INTO " + table + " VALUES (1)",
			"/* a comment */ UPDATE " + table + " SET id = id",
			"delete FROM " + table + " WHERE id = 99",
		} {
			_, err := db.Exec(write)
			if got := mysqlErrNumber(err); got != tc.writeErr || (tc.writeErr == 0) != (err == nil) {
				t.Errorf("%v: %q gave %v, want error number %d", tc.role, write, err, tc.writeErr)
			}
		}
		if tc.writeErr == 0 {
			if _, err := db.Exec("DELETE FROM " + table); err != nil {
				t.Fatal(err)
			}
		} else if got := p.Refused() - refused; got != 3 {
			t.Errorf("%v: Refused grew by %d, want 3", tc.role, got)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
			t.Errorf("%v: a read failed: %v", tc.role, err)
		}
		if _, err := db.Exec("SET @lbd_role = 1"); err != nil {
			t.Errorf("%v: SET refused: %v", tc.role, err)
		}
		if got := readOnlyFlag(t, db); got != tc.readOnly {
			t.Errorf("%v: @@global.read_only = %d, want %d", tc.role, got, tc.readOnly)
		}
		if got := tenantRole(t, db); got != tc.tenant {
			t.Errorf("%v: TENANT_ROLE = %q, want %q", tc.role, got, tc.tenant)
		}
	}
}

// A prepared write is refused at prepare time on a read-only proxy.
func TestReplicaRefusesPreparedWrites(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	p.SetRole(Replica)
	if _, err := db.Prepare("INSERT INTO nowhere VALUES (?)"); mysqlErrNumber(err) != 1290 {
		t.Fatalf("prepare of a write on a replica: %v, want error 1290", err)
	}
	st, err := db.Prepare("SELECT ?")
	if err != nil {
		t.Fatalf("prepare of a read on a replica: %v", err)
	}
	defer st.Close()
	var v int
	if err := st.QueryRow(7).Scan(&v); err != nil || v != 7 {
		t.Fatalf("prepared read = %d, %v", v, err)
	}
}

// Switchover flips two groups; with a gap, no proxy of either group is primary until it ends.
func TestSwitchover(t *testing.T) {
	c := NewCluster(t, 4)
	a, b := c.Proxies()[:2], c.Proxies()[2:]
	for _, p := range b {
		p.SetRole(Standby)
	}
	Switchover(a, b, 0)
	for i, p := range c.Proxies() {
		if want := map[bool]Role{true: Standby, false: Primary}[i < 2]; p.Role() != want {
			t.Fatalf("proxy %d is %v after the switchover, want %v", i, p.Role(), want)
		}
	}

	// Back, with a gap: watch the roles while it runs.
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		Switchover(b, a, 300*time.Millisecond)
	}()
	sawNoPrimary := false
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		primaries := 0
		for _, p := range c.Proxies() {
			if p.Role() == Primary {
				primaries++
			}
		}
		if primaries == 0 {
			sawNoPrimary = true
		}
		if running && primaries > 2 {
			t.Fatalf("%d primaries during the switchover", primaries)
		}
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	if !sawNoPrimary {
		t.Error("never saw the gap with no primary")
	}
	for i, p := range c.Proxies() {
		if want := map[bool]Role{true: Primary, false: Standby}[i < 2]; p.Role() != want {
			t.Fatalf("proxy %d is %v after switching back, want %v", i, p.Role(), want)
		}
	}
}

func TestFirstKeyword(t *testing.T) {
	for in, want := range map[string]string{
		"  insert into t":          "insert",
		"/* x */ /*y*/UPDATE t":    "UPDATE",
		"-- c\n# d\n DELETE":       "DELETE",
		"(SELECT 1)":               "SELECT",
		"/* never closed":          "",
		"":                         "",
		"123":                      "",
		"# only a comment":         "",
		"REPLACE INTO t VALUES(1)": "REPLACE",
	} {
		if got := string(firstKeyword([]byte(in))); got != want {
			t.Errorf("firstKeyword(%q) = %q, want %q", in, got, want)
		}
	}
	if isWrite([]byte("INSERTX")) || !isWrite([]byte("truncate t")) || isWrite([]byte("SELECT 1")) {
		t.Error("isWrite misjudges")
	}
}

// statusRows runs a SHOW STATUS through db and returns its rows by name.
func statusRows(t *testing.T, db *sql.DB, query string) map[string]string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			t.Fatal(err)
		}
		out[name] = value
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The role answers Galera's status (the server's shape: name and value rows) and Group
// Replication's member table (the one value lbd's check folds it into) for itself.
func TestGaleraAndGroupReplicationRoles(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	t.Cleanup(func() { p.SetRole(Primary) })
	for _, tc := range []struct {
		role                    Role
		localState              string
		memberRole, memberState string
	}{
		{Primary, "4", "PRIMARY", "ONLINE"},
		{Replica, "4", "SECONDARY", "ONLINE"},
		{Standby, "2", "SECONDARY", "RECOVERING"},
	} {
		p.SetRole(tc.role)
		got := statusRows(t, db, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state')")
		want := map[string]string{"wsrep_ready": "ON", "wsrep_cluster_status": "Primary", "wsrep_local_state": tc.localState}
		if len(got) != len(want) || got["wsrep_ready"] != "ON" || got["wsrep_cluster_status"] != "Primary" || got["wsrep_local_state"] != tc.localState {
			t.Errorf("%v: Galera status %v, want %v", tc.role, got, want)
		}
		if got := statusRows(t, db, "show status like 'wsrep_local_state%'"); len(got) != 2 || got["wsrep_local_state"] != tc.localState {
			t.Errorf("%v: SHOW STATUS LIKE gave %v", tc.role, got)
		}
		var member string
		if err := db.QueryRow("SELECT COALESCE(MAX(CONCAT(MEMBER_ROLE, ' ', MEMBER_STATE)), 'NONE NONE') " +
			"FROM performance_schema.replication_group_members WHERE MEMBER_ID = @@server_uuid").Scan(&member); err != nil {
			t.Fatalf("%v: member query: %v", tc.role, err)
		}
		if want := tc.memberRole + " " + tc.memberState; member != want {
			t.Errorf("%v: member %q, want %q", tc.role, member, want)
		}
		if got := statusRows(t, db, "SHOW STATUS WHERE Variable_name = 'wsrep_local_state_comment'"); len(got) != 1 {
			t.Errorf("%v: SHOW STATUS WHERE = gave %v", tc.role, got)
		}
		if got := statusRows(t, db, "SHOW GLOBAL STATUS LIKE 'wsrep_nothing%'"); len(got) != 0 {
			t.Errorf("%v: SHOW STATUS LIKE matching nothing gave %v", tc.role, got)
		}
	}
	// Statements that only look alike are relayed as they are.
	var v string
	if err := db.QueryRow("SELECT 'SHOW STATUS wsrep_ready'").Scan(&v); err != nil || v != "SHOW STATUS wsrep_ready" {
		t.Errorf("a SELECT naming wsrep_ was rewritten: %q, %v", v, err)
	}
}

// TestReplicationLag: a replica with a lag set answers its replica status with it; a primary,
// or a replica whose lag was cleared, relays the statement.
func TestReplicationLag(t *testing.T) {
	c := NewCluster(t, 1)
	p := c.Proxy(0)
	db := openDB(t, c, p.Addr(), "")
	p.SetRole(Replica)
	p.SetReplicationLag(3500 * time.Millisecond)
	var secs sql.NullInt64
	if err := db.QueryRow("SHOW REPLICA STATUS").Scan(&secs); err != nil || !secs.Valid || secs.Int64 != 3 {
		t.Fatalf("lag 3.5 s: %v, %v; want 3", secs, err)
	}
	if err := db.QueryRow("/* probe */ show slave status").Scan(&secs); err != nil || secs.Int64 != 3 {
		t.Fatalf("SHOW SLAVE STATUS after a comment: %v, %v; want 3", secs, err)
	}
	p.SetReplicationLag(-1)
	if err := db.QueryRow("SHOW REPLICA STATUS").Scan(&secs); err != nil || secs.Valid {
		t.Fatalf("replication stopped: %v, %v; want NULL", secs, err)
	}
	p.SetRole(Primary)
	if err := db.QueryRow("SHOW REPLICA STATUS").Scan(&secs); err == nil && secs.Valid && secs.Int64 == 3 {
		t.Fatal("a primary answered with the replica's lag")
	}
}
