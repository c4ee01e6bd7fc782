package sqlclass

import "testing"

var readCases = []struct {
	q    string
	want bool
}{
	// Reads.
	{"SELECT * FROM t", true},
	{"  select 1", true},
	{"(SELECT 1) UNION (SELECT 2)", true},
	{"((  /* a */ ( SELECT 1)))", true},
	{"/* hint */ SELECT 1", true},
	{"/**/select/**/1", true},
	{"-- note\nSELECT 1", true},
	{"# note\r\n\tShow tables", true},
	{"SHOW FULL PROCESSLIST", true},
	{"SHOW CREATE TABLE t", true},
	{"DESC t", true},
	{"describe t", true},
	{"DESCRIBE t c", true},
	{"selecT id FROM t FOR UPDATE", true}, // outside a transaction the lock ends with the statement
	{"SELECT * FROM t LOCK IN SHARE MODE", true},
	{"SELECT 1;", true},
	{"SELECT 1 ; ; -- done", true},
	{"SELECT * FROM t WHERE a = 'x; DELETE FROM t'", true},
	{"SELECT `into`, 'analyze' FROM t", true},
	{"SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1", true},
	{"SELECT /*!50700 SQL_NO_CACHE */ * FROM t", true},
	{"SELECT @@autocommit, @@session.sql_mode", true},
	{"/*!*/ SELECT 1", true},

	// Not a read verb.
	{"", false},
	{"-- only a comment", false},
	{"/* unterminated SELECT 1", false},
	{"--SELECT 1", false},
	{"SELECTED", false},
	{"SELECT_ME()", false},
	{"SELECT\u00e9", false},
	{"\u00a0SELECT 1", false},
	{"INSERT INTO t VALUES (1)", false},
	{"  \n REPLACE INTO t SELECT * FROM other", false},
	{"UPDATE t SET a = 1", false},
	{"DELETE FROM t WHERE id IN (SELECT 1)", false},
	{"CALL p()", false},
	{"DO SLEEP(1)", false},
	{"TABLE t", false},
	{"VALUES ROW(1)", false},
	{"EXPLAIN SELECT 1", false},         // EXPLAIN ANALYZE runs its statement; EXPLAIN is left out whole
	{"EXPLAIN ANALYZE SELECT 1", false}, //
	{"WITH x AS (SELECT 1) DELETE FROM t", false},
	{"WITH x AS (SELECT 1) SELECT * FROM x", false}, // MySQL also accepts WITH before UPDATE and DELETE
	{"HANDLER t READ FIRST", false},

	// A read verb that runs something: DESC is a synonym of EXPLAIN.
	{"DESC ANALYZE SELECT 1", false},
	{"describe analyze delete t1 from t1, t2 where t1.a = t2.a", false},
	{"DESCRIBE FORMAT=TREE ANALYZE SELECT 1", false},

	// Executable comments hold SQL the server may or may not run.
	{"/*!40101 SET NAMES utf8 */ SELECT 1", false},
	{"/*M!100100 DELETE FROM t */ SELECT 1", false},
	{"/*!SELECT 1*/", false},
	{"/*!99999 SELECT */ DELETE FROM t", false},
	{"(/*!SELECT 1*/)", false},
	{"SELECT 1 /*!99999 ; DELETE FROM t */", false},

	// More than one statement: a retry would run them all again.
	{"SELECT 1; DELETE FROM t", false},
	{"SELECT 1; SELECT 2", false},
	{"BEGIN; SELECT 1", false},
	{"SELECT 1 -- ;\nDELETE FROM t", true}, // the ";" is in the comment: one statement, a SELECT

	// Reads whose answer or side effects belong to the session they ran on.
	{"SELECT FOUND_ROWS()", false},
	{"SELECT ROW_COUNT()", false},
	{"SELECT LAST_INSERT_ID()", false},
	{"SELECT @@last_insert_id", false},
	{"SHOW WARNINGS", false},
	{"SHOW COUNT(*) ERRORS", false},
	{"SELECT @a", false},
	{"SELECT a INTO @v FROM t", false},
	{"SELECT a FROM t INTO OUTFILE '/tmp/a'", false},
	{"SELECT a INTO DUMPFILE '/tmp/a' FROM t", false},
	{"SELECT GET_LOCK('x', 10)", false},
	{"SELECT NEXTVAL(s)", false},
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10", false},
	{"SELECT 'unterminated", false},
}

func TestRetryableRead(t *testing.T) {
	for _, c := range readCases {
		if got := RetryableRead(c.q); got != c.want {
			t.Errorf("RetryableRead(%q) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestRetryableReadDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		for _, c := range readCases {
			RetryableRead(c.q)
		}
	})
	if allocs != 0 {
		t.Errorf("RetryableRead allocates %v times per run", allocs)
	}
}
