package sqlclass

import "testing"

// Which texts a replica may run: one row per rule.
var replicaReads = []struct {
	query string
	want  bool
}{
	{"SELECT id FROM t WHERE id = 1", true},
	{"  /* a comment */ select * from t", true},
	{"(SELECT 1) UNION (SELECT 2)", true},
	{"SELECT * FROM t -- trailing\n", true},
	{"SELECT 'for update' FROM t", true},    // a string, not a clause
	{"SELECT `for`, `update` FROM t", true}, // quoted identifiers
	{"SELECT * FROM t FOR UPDATE", false},   // a lock only the primary gives
	{"select * from t for share", false},    // MySQL 8's shared lock
	{"SELECT * FROM t LOCK IN SHARE MODE", false},
	{"SELECT * FROM t FOR UPDATE SKIP LOCKED", false},
	{"SHOW TABLES", false}, // answers differ per server
	{"DESC t", false},
	{"WITH x AS (SELECT 1) SELECT * FROM x", false}, // WITH may lead a DELETE or UPDATE
	{"SELECT 1; DELETE FROM t", false},              // multi-statement
	{"SELECT * FROM t INTO OUTFILE '/tmp/x'", false},
	{"SELECT @v := 1", false},      // a user variable is session state
	{"SELECT FOUND_ROWS()", false}, // reads the previous statement's session
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t", false},
	{"SELECT GET_LOCK('x', 1)", false},
	{"/*!50000 SELECT 1 */", false}, // executable comment
	{"CALL p()", false},             // may write
	{"INSERT INTO t SELECT * FROM u", false},
	{"UPDATE t SET x = 1", false},
	{"SET @a = 1", false},
	{"BEGIN", false},
	{"", false},
	{"SELECT 'unterminated", false},
}

func TestReplicaRead(t *testing.T) {
	for _, tc := range replicaReads {
		if got := ReplicaRead(tc.query); got != tc.want {
			t.Errorf("ReplicaRead(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestReplicaReadDoesNotAllocate(t *testing.T) {
	q := "SELECT a, b FROM t WHERE c = 'x' ORDER BY a LIMIT 10"
	if n := testing.AllocsPerRun(100, func() { ReplicaRead(q) }); n != 0 {
		t.Fatalf("ReplicaRead allocates %v times", n)
	}
}

func FuzzReplicaRead(f *testing.F) {
	for _, tc := range replicaReads {
		f.Add(tc.query)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if ReplicaRead(q) && !RetryableRead(q) {
			t.Fatalf("%q is a replica read but not a retryable read", q)
		}
	})
}
