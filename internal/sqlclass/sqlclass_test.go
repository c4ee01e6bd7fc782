package sqlclass

import (
	"strings"
	"testing"
)

const (
	none = Effect(0)
	B    = BeginsTx
	E    = EndsTx
	S    = Session
	P    = ProducesResult
	R    = ReadsResult
)

var cases = []struct {
	q    string
	want Effect
}{
	// Empty and comment-only texts.
	{"", none},
	{"   \t\r\n ", none},
	{";", none},
	{";;  ;", none},
	{"/* only a comment */", none},
	{"-- only a comment", none},
	{"# only a comment", none},
	{"--", none},
	{"/* unterminated BEGIN", none},
	{"/*+ BEGIN */", none},

	// Plain queries.
	{"SELECT 1", none},
	{"SELECT * FROM t WHERE id = ?", none},
	{"SELECT begin_date, commit_id FROM t", none},
	{"SELECT my_found_rows(), row_counts() FROM t", none},
	{"SELECT t.row_count FROM t", none},
	{"SELECT row_count FROM t", none},
	{"SELECT found_rows FROM t", none},
	{"SELECT @@autocommit, @@session.sql_mode, @@GLOBAL.max_connections", none},
	{"EXPLAIN SELECT * FROM t", none},
	{"EXPLAIN INSERT INTO t VALUES (1)", none},
	{"DESCRIBE t", none},
	{"DESC t", none},
	{"SHOW TABLES", none},
	{"TABLE t", none},
	{"VALUES ROW(1)", none},
	{"SELECT * FROM t FOR UPDATE", none},
	{"UNLOCK TABLES", none},
	{"START SLAVE", none},
	{"SAVEPOINT a", none},
	{"RELEASE SAVEPOINT a", none},

	// Strings, quoted identifiers and comments hide keywords.
	{"SELECT 'BEGIN'", none},
	{"SELECT 'it''s @a', \"@b\", 'x\\'@c'", none},
	{"SELECT `@a`", none},
	{"SELECT `a``@b`", none},
	{"INSERT INTO t VALUES ('@x')", P},
	{"SELECT 'found_rows()'", none},
	{"SELECT 1 /* @a found_rows() */", none},
	{"SELECT 1 -- @a\n", none},
	{"SELECT 1 # @a", none},
	{"SELECT 1 --@a", S},                   // "--" without a space is two minus signs
	{"SELECT 1--\t@a", none},               // tab after the dashes: a comment
	{"SELECT 1 /*+ SET_VAR(x=1) */", none}, // optimizer hint
	{"SELECT 'unterminated @a", S},
	{"SELECT \"unterminated \\\" @a", S},
	{"SELECT `unterminated @a", S},
	{"SELECT 'C:\\' INTO @v", S},
	{"SELECT 'a\\\\' , @b", S}, // escaped backslash closes the string

	// Executable comments are code.
	{"/*!40101 SET NAMES utf8 */", S},
	{"/*!SET @a = 1*/", S},
	{"/*!50001 CREATE TEMPORARY TABLE t (a INT) */", S},
	{"CREATE /*!32312 TEMPORARY */ TABLE t (a INT)", S},
	{"/*!BEGIN*/", B},
	{"/*!40000 BEGIN */ /* x */", B},
	{"/*M!100100 SET @x = 1 */", S},
	{"SELECT /*! 1 */ * /* c */ FROM t", none},
	{"SELECT /*!*/ found_rows()", R},
	{"/*!50001 SELECT '*/ @a' */", none},

	// BeginsTx.
	{"BEGIN", B},
	{"begin", B},
	{"BEGIN;", B},
	{"  BEGIN  WORK ;", B},
	{"Begin\n\tWork", B},
	{"/* tx */ BEGIN", B},
	{"BEGIN NOT ATOMIC SELECT 1; END", none},
	{"BEGIN WORK NOW", none},
	{"BEGIN ()", none},
	{"START TRANSACTION", B},
	{"start transaction", B},
	{"START TRANSACTION READ ONLY", B},
	{"START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT", B},
	{"START\nTRANSACTION\r\nISOLATION LEVEL SERIALIZABLE", B},
	{"COMMIT AND CHAIN", B},
	{"COMMIT WORK AND CHAIN", B},
	{"ROLLBACK AND CHAIN", B},
	{"ROLLBACK WORK AND CHAIN NO RELEASE", B},
	{"XA START 'x'", B | S},
	{"XA BEGIN 'x'", B | S},

	// EndsTx.
	{"COMMIT", E},
	{"commit work", E},
	{"ROLLBACK", E},
	{"ROLLBACK WORK;", E},
	{"COMMIT AND NO CHAIN", E},
	{"COMMIT RELEASE", E},
	{"COMMIT NO RELEASE", E},
	{"ROLLBACK AND NO CHAIN RELEASE", E},
	{"ROLLBACK WORK RELEASE", E},
	{"XA COMMIT 'x'", E | S},
	{"XA COMMIT 'x' ONE PHASE", E | S},
	{"XA ROLLBACK 'x'", E | S},
	{"ROLLBACK TO s1", none},
	{"ROLLBACK TO SAVEPOINT s1", none},
	{"ROLLBACK WORK TO SAVEPOINT s1", none},
	{"COMMIT AND CHAIN RELEASE", none}, // rejected by MySQL
	{"COMMIT AND", none},
	{"COMMIT foo", none},
	{"COMMIT;", E},

	// Other XA statements are Session only.
	{"XA END 'x'", S},
	{"XA PREPARE 'x'", S},
	{"XA RECOVER", S},
	{"xa", S},

	// Session.
	{"SET x = 1", S},
	{"set autocommit=0", S},
	{"SET @a = 1", S},
	{"SET @@session.sql_mode = ''", S},
	{"SET NAMES utf8mb4", S},
	{"SET CHARACTER SET utf8", S},
	{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", S},
	{"SET PASSWORD = 'x'", S},
	{"SET ROLE ALL", S},
	{"USE db", S},
	{"use `db`", S},
	{"SELECT @a", S},
	{"SELECT @'a', 1", S},
	{"SELECT @\"a\"", S},
	{"SELECT @`a b`", S},
	{"SELECT * FROM t WHERE id = @id", S},
	{"SELECT a INTO @v FROM t", S},
	{"SELECT@a", S},
	{"UPDATE t SET a = @a", S | P},
	{"CREATE TEMPORARY TABLE t (a INT)", S},
	{"create temporary table if not exists t (a int)", S},
	{"CREATE OR REPLACE TEMPORARY TABLE t (a INT)", S},
	{"CREATE TABLE temporary (a INT)", none},
	{"CREATE TABLE t (a INT)", none},
	{"LOCK TABLES t READ", S},
	{"LOCK TABLE t WRITE", S},
	{"lock tables t1 read, t2 write", S},
	{"FLUSH TABLES WITH READ LOCK", S},
	{"FLUSH TABLES t FOR EXPORT", S},
	{"FLUSH PRIVILEGES", none},
	{"SELECT GET_LOCK('x', 10)", S},
	{"SELECT get_lock ('x', 10)", S},
	{"DO GET_LOCK('x', 0)", S},
	{"SELECT db.get_lock('x', 10)", none},
	{"SELECT get_lock FROM t", none},
	{"SELECT RELEASE_LOCK('x')", none},
	{"PREPARE s FROM 'SELECT 1'", S},
	{"EXECUTE s USING @a", S},
	{"EXECUTE s", S},
	{"DEALLOCATE PREPARE s", S},
	{"DROP PREPARE s", S},
	{"DROP TABLE t", none},
	{"HANDLER t OPEN", S},
	{"GRANT SELECT ON db.* TO 'u'@'localhost'", none}, // account name, not a variable
	{"CREATE DEFINER=`root`@`%` VIEW v AS SELECT 1", none},
	{"CREATE USER u@localhost", S}, // unquoted account names look like variables: pinned
	{"SELECT 'a' @b", S},

	// ProducesResult.
	{"INSERT INTO t VALUES (1)", P},
	{"insert into t values (?, ?, ?)", P},
	{"REPLACE INTO t VALUES (1)", P},
	{"UPDATE t SET a = 1", P},
	{"DELETE FROM t", P},
	{"LOAD DATA INFILE 'f' INTO TABLE t", P},
	{"LOAD XML INFILE 'f' INTO TABLE t", P},
	{"CALL p()", P | S},
	{"SELECT NEXTVAL(s)", P},
	{"SELECT nextval (s)", P},
	{"SELECT SETVAL(s, 10)", P},
	{"SELECT LASTVAL(s)", R},
	{"INSERT INTO t VALUES (NEXT VALUE FOR s)", P},
	{"SELECT PREVIOUS VALUE FOR s", R},
	{"SELECT s.NEXTVAL FROM dual", P},
	{"SELECT s.currval FROM dual", R},
	{"SELECT next, value, previous FROM t", none},
	{"SELECT lastval FROM t", none},
	{"CALL p(@out)", P | S},
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 10", P},
	{"(SELECT SQL_CALC_FOUND_ROWS a FROM t) UNION (SELECT a FROM u) LIMIT 1", P},
	{"((select sql_calc_found_rows 1))", P},
	{"SELECT REPLACE(a, 'x', 'y') FROM t", none},
	{"SELECT LAST_INSERT_ID(5)", P | R},
	{"UPDATE t SET id = LAST_INSERT_ID(id + 1)", P | R},
	{"SELECT LAST_INSERT_ID( /* c */ 1)", P | R},
	{"EXPLAIN SELECT SQL_CALC_FOUND_ROWS * FROM t", none},
	{"WITH c AS (SELECT 1) SELECT * FROM c", none},
	{"WITH c AS (SELECT 1) UPDATE t, c SET t.a = 1", P},
	{"WITH RECURSIVE c (n) AS (SELECT 1 UNION SELECT n + 1 FROM c WHERE n < 5) DELETE FROM t", P},
	{"WITH c AS (SELECT 1), d AS (SELECT 2) SELECT * FROM c, d", none},
	{"(WITH c AS (SELECT 1) SELECT * FROM c)", none},
	{"INSERT INTO t SELECT * FROM u", P},
	{"with", none},

	// ReadsResult.
	{"SELECT FOUND_ROWS()", R},
	{"SELECT found_rows ()", R},
	{"SELECT ROW_COUNT()", R},
	{"select row_count( )", R},
	{"SELECT LAST_INSERT_ID()", R},
	{"SELECT last_insert_id\n()", R},
	{"SELECT LAST_INSERT_ID(/* none */)", R},
	{"SELECT x.LAST_INSERT_ID()", none},
	{"SELECT x . found_rows()", none},
	{"SELECT @@last_insert_id", R},
	{"SELECT @@session.identity", R},
	{"INSERT INTO t2 (pid) VALUES (LAST_INSERT_ID())", P | R},
	{"SHOW WARNINGS", R},
	{"SHOW COUNT(*) ERRORS", R},
	{"GET DIAGNOSTICS @n = NUMBER", R | S},
	{"SELECT 1 FROM t WHERE a = found_rows(", R},
	{"SELECT LAST_INSERT_ID(", P | R},

	// Several statements.
	{"BEGIN; INSERT INTO t VALUES (1); COMMIT", E | P | TxInside},
	{"BEGIN; INSERT INTO t VALUES (1); COMMIT;", E | P | TxInside},
	{"COMMIT; BEGIN", B},
	{"START TRANSACTION; SELECT 1", B},
	{"BEGIN; ROLLBACK TO SAVEPOINT a", B},
	{"BEGIN; COMMIT foo", B},
	{"SET @a = 1; SELECT @a", S},
	{"INSERT INTO t VALUES (1); SELECT LAST_INSERT_ID()", P | R},
	{"SELECT 1; SELECT 2;;", none},
	{"SELECT ';'; BEGIN", B},
	{"SELECT 1 -- ; BEGIN", none},
	{"SELECT 1 -- ;\nBEGIN", none}, // the ";" is in the comment: one statement
	{"BEGIN NOT ATOMIC COMMIT; END", none},
	{"BEGIN; /* c */", B},
	{"XA START 'a'; XA END 'a'; XA PREPARE 'a'; XA COMMIT 'a'", E | S | TxInside},
	{"COMMIT; EXPLAIN SELECT 1", E},

	// Odd but harmless input.
	{"@", S},
	{"@@", none},
	{")))", none},
	{"(((", none},
	{"*/ BEGIN", none},
	{"/*!", none},
	{"/*!*/*/", none},
	{"\x00\xff\xfe", none},
	{"ÉBEGIN", none},
	{"BEGINé", none},
}

func TestClassify(t *testing.T) {
	for _, c := range cases {
		if got := Classify(c.q); got != c.want {
			t.Errorf("Classify(%q) = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestEffectString(t *testing.T) {
	for _, c := range []struct {
		e    Effect
		want string
	}{
		{0, "none"},
		{BeginsTx, "BeginsTx"},
		{EndsTx, "EndsTx"},
		{BeginsTx | Session, "BeginsTx|Session"},
		{ProducesResult | ReadsResult, "ProducesResult|ReadsResult"},
		{EndsTx | Session | ProducesResult | ReadsResult, "EndsTx|Session|ProducesResult|ReadsResult"},
		{0xff, "BeginsTx|EndsTx|Session|ProducesResult|ReadsResult|TxInside|0xc0"},
		{0x40, "0x40"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("Effect(%#x).String() = %q, want %q", uint8(c.e), got, c.want)
		}
	}
}

func TestEffectHas(t *testing.T) {
	e := BeginsTx | Session
	if !e.Has(BeginsTx) || !e.Has(Session) || !e.Has(BeginsTx|Session) || !e.Has(0) {
		t.Error("Has misses bits that are set")
	}
	if e.Has(EndsTx) || e.Has(Session|ReadsResult) {
		t.Error("Has reports bits that are not set")
	}
}

const (
	benchSelect = "SELECT id, name FROM users WHERE uid = ?" // 40 bytes

	benchInsert = "INSERT INTO orders (user_id, product_id, quantity, unit_price, currency, status, " +
		"created_at, note) VALUES (?, ?, ?, ?, ?, ?, NOW(), 'it''s a \"gift\"') " +
		"ON DUPLICATE KEY UPDATE quantity = quantity + ?" // 197 bytes

	// 217 bytes: a tag comment, an optimizer hint, line comments, an executable comment.
	benchComments = "/* app=shop trace=4bf92f3577b34da6 */ SELECT /*+ MAX_EXECUTION_TIME(1000) */ " +
		"o.id, o.status -- the order\nFROM orders o # main table\n" +
		"WHERE o.user_id = ? AND o.note <> '/* not a comment */' /*!50700 AND o.deleted = 0 */"
)

func TestClassifyDoesNotAllocate(t *testing.T) {
	texts := []string{benchSelect, benchInsert, benchComments, "BEGIN; SET @a = 1; COMMIT AND CHAIN"}
	for _, c := range cases {
		texts = append(texts, c.q)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, q := range texts {
			Classify(q)
		}
	})
	if allocs != 0 {
		t.Errorf("Classify allocates %v times per run", allocs)
	}
}

func FuzzClassify(f *testing.F) {
	for _, c := range cases {
		f.Add(c.q)
	}
	for _, c := range readCases {
		f.Add(c.q)
	}
	f.Add(benchInsert)
	f.Add(benchComments)
	f.Fuzz(func(t *testing.T, q string) {
		e := Classify(q)
		if e>>len(effectNames) != 0 {
			t.Fatalf("Classify(%q) = %v: unknown bits", q, e)
		}
		if e.Has(BeginsTx | EndsTx) {
			t.Fatalf("Classify(%q) = %v: both BeginsTx and EndsTx", q, e)
		}
		if RetryableRead(q) && e != 0 {
			t.Fatalf("RetryableRead(%q) is true, but Classify finds %v", q, e)
		}
		if r := RetryableRead("/* c */ " + q); r != RetryableRead(q) {
			t.Fatalf("a leading comment changes RetryableRead(%q) to %v", q, r)
		}
		if c := Classify("/* c */ " + q); c != e {
			t.Fatalf("a leading comment changes the result: Classify(%q) = %v, with comment %v", q, e, c)
		}
		// Keywords are case-insensitive. ("/*m!" is not an executable comment, "/*M!" is.)
		if !strings.Contains(q, "/*m") {
			if r := RetryableRead(asciiUpper(q)); r != RetryableRead(q) {
				t.Fatalf("upper case changes RetryableRead(%q) to %v", q, r)
			}
			if c := Classify(asciiUpper(q)); c != e {
				t.Fatalf("upper case changes the result: Classify(%q) = %v, upper case %v", q, e, c)
			}
		}
	})
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

func benchmark(b *testing.B, q string) {
	b.ReportAllocs()
	b.SetBytes(int64(len(q)))
	for b.Loop() {
		Classify(q)
	}
}

func BenchmarkSelect40(b *testing.B)  { benchmark(b, benchSelect) }
func BenchmarkInsert200(b *testing.B) { benchmark(b, benchInsert) }
func BenchmarkComments(b *testing.B)  { benchmark(b, benchComments) }
func BenchmarkMultiStmt(b *testing.B) {
	benchmark(b, "BEGIN; UPDATE t SET a = a + 1 WHERE id = ?; COMMIT")
}
func BenchmarkSetSession(b *testing.B) {
	benchmark(b, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
}
