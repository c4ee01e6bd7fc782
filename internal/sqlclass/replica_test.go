package sqlclass

import (
	"strings"
	"testing"
)

// Which texts a replica may run: read is ReplicaRead, session is ReplicaSession.
var replicaCases = []struct {
	query         string
	read, session bool
}{
	// Plain reads and their clauses.
	{"SELECT id FROM t WHERE id = 1", true, true},
	{"  /* a comment */ select * from t", true, true},
	{"(SELECT 1) UNION (SELECT 2)", true, true},
	{"SELECT * FROM t -- trailing\n", true, true},
	{"SELECT 1;", true, true},
	{"SELECT 'for update' FROM t", true, true},    // a string, not a clause
	{"SELECT `for`, `update` FROM t", true, true}, // quoted identifiers
	{"SELECT * FROM t FOR UPDATE", false, false},  // a lock only the primary gives
	{"select * from t for share", false, false},   // MySQL 8's shared lock
	{"SELECT * FROM t LOCK IN SHARE MODE", false, false},
	{"SELECT * FROM t FOR UPDATE SKIP LOCKED", false, false},
	{"SELECT * FROM t /* x */ FOR /* y */ UPDATE", false, false},
	{"SHOW TABLES", false, false}, // answers differ per server
	{"DESC t", false, false},
	{"WITH x AS (SELECT 1) SELECT * FROM x", false, false}, // WITH may lead a DELETE or UPDATE
	{"SELECT 1; DELETE FROM t", false, false},              // multi-statement
	{"SELECT 1; SELECT 2", false, false},
	{"CALL p()", false, false}, // may write
	{"INSERT INTO t SELECT * FROM u", false, false},
	{"UPDATE t SET x = 1", false, false},
	{"BEGIN", false, false},
	{"", false, false},
	{"SELECT 'unterminated", false, false},
	{"SELECT 1 /* unterminated", false, false},
	{"SELECT (1", false, false},
	{"SELECT 1)", false, false},

	// Session state: user variables, INTO and SET.
	{"SELECT @v := 1", false, true}, // a user variable is session state
	{"SELECT @a, @'b', @`c` FROM t WHERE x = @d", false, true},
	{"SELECT a INTO @v FROM t", false, true},
	{"SELECT a, b FROM t INTO @v, @w", false, true},
	{"SELECT * FROM t INTO OUTFILE 'out.csv'", false, false},
	{"SELECT a INTO DUMPFILE 'out.bin' FROM t", false, false},
	{"SELECT a INTO v FROM t", false, false}, // a local variable of a stored program
	{"SELECT a INTO @v FROM t FOR UPDATE", false, false},
	{"SET @a = 1", false, true},
	{"SET @a = 1, @b := CONCAT(@a, 'x'), @`c` = (SELECT MAX(id) FROM t)", false, true},
	{"set @a=1;", false, true},
	{"SET @a = 1, b = 2", false, false},   // b is a system variable
	{"SET @a = 1, @@b = 2", false, false}, // so is @@b
	{"SET @a = @@server_id", false, false},
	{"SET @a = 1, SESSION sql_mode = ''", false, false},
	{"SET SESSION sql_mode = ''", false, false},
	{"SET GLOBAL x = 1", false, false},
	{"SET PERSIST x = 1", false, false},
	{"SET NAMES utf8mb4", false, false},
	{"SET CHARACTER SET utf8mb4", false, false},
	{"SET TRANSACTION READ ONLY", false, false},
	{"SET autocommit = 0", false, false},
	{"SET @a = GET_LOCK('k', 1)", false, false},
	{"SET @a = (SELECT id FROM t FOR UPDATE)", false, false},
	{"SET @a = 1; SELECT @a", false, false},
	{"(SET @a = 1)", false, false},
	{"SET STATEMENT max_statement_time = 1 FOR SELECT 1", false, false}, // MariaDB
	{"SELECT 'a'@'b'", false, false},                                    // an account name
	{"SELECT 'a'@@x", false, false},

	// Functions: the bugs of named locks.
	{"SELECT GET_LOCK('x', 1)", false, false},
	{"SELECT IS_FREE_LOCK('k')", false, false},
	{"SELECT IS_USED_LOCK('k')", false, false},
	{"SELECT RELEASE_LOCK('k')", false, false},
	{"SELECT RELEASE_ALL_LOCKS()", false, false},
	{"select is_free_lock ('k')", false, false},
	{"SELECT a FROM t WHERE IS_FREE_LOCK(CONCAT('k', a))", false, false},

	// Functions: qualified, unknown, quoted, and spaced names.
	{"SELECT db.f(1)", false, false},
	{"SELECT db . f (1)", false, false},
	{"SELECT `db`.`f`(1)", false, false},
	{"SELECT db.CONCAT('a')", false, false}, // a stored function with a built-in's name
	{"SELECT f(1)", false, false},           // user-defined or stored
	{"SELECT my_concat('a', 'b')", false, false},
	{"SELECT `concat`('a')", false, false},
	{"SELECT \"concat\"('a')", false, false},  // an identifier under ANSI_QUOTES
	{"SELECT COUNT (*) FROM t", false, false}, // blank before "(": may be a stored function
	{"SELECT COUNT/**/(*) FROM t", false, false},
	{"SELECT COUNT(*) FROM t", true, true},
	{"SELECT IF (a > 0, 1, 2), LEFT (b, 2) FROM t", true, true}, // reserved words
	{"SELECT 1(2)", false, false},

	// Keywords before "(".
	{"SELECT a FROM t WHERE b IN (1, 2) AND c NOT IN (SELECT c FROM u)", true, true},
	{"SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a)", true, true},
	{"SELECT d.a FROM (SELECT a FROM t) AS d", true, true},
	{"SELECT * FROM (SELECT 1, 2) AS d (a, b)", true, true},
	{"SELECT * FROM t JOIN (u, v) ON (t.a = u.a) USING (b)", true, true},
	{"SELECT SUM(a) OVER (PARTITION BY b ORDER BY c ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t", true, true},
	{"SELECT RANK() OVER w FROM t WINDOW w AS (ORDER BY a)", true, true},
	{"SELECT a FROM t USE INDEX (i) FORCE KEY FOR JOIN (j) IGNORE INDEX FOR ORDER BY (k)", true, true},
	{"SELECT a FROM t WHERE (a, b) = ROW(1, 2) AND c > ANY (SELECT c FROM u) AND d = SOME (SELECT 1) AND e > ALL (SELECT 2)", true, true},
	{"SELECT CASE WHEN (a) THEN (b) ELSE (c) END FROM t", true, true},
	{"SELECT a FROM t WHERE a LIKE ('x%') OR a BETWEEN (1) AND (2) OR a IS (NULL) OR NOT (a) OR (a) XOR (b)", true, true},
	{"SELECT MATCH (a, b) AGAINST ('x' IN NATURAL LANGUAGE MODE) FROM t", true, true},
	{"SELECT * FROM t, LATERAL (SELECT a FROM u WHERE u.b = t.b) AS l", false, false}, // "1, lateral(2)" calls a stored function in MariaDB
	{"SELECT 1 UNION ALL (SELECT 2) UNION DISTINCT (SELECT 3) INTERSECT (SELECT 3) EXCEPT (SELECT 4)", true, true},
	{"SELECT a FROM t GROUP BY (a) HAVING (COUNT(*) > 1) ORDER BY (a)", true, true},
	{"SELECT CAST(a AS DECIMAL(10, 2)), CAST(b AS CHAR(3)), CAST(c AS DATETIME(6)), CONVERT(d, DECIMAL(5))", true, true},
	{"SELECT * FROM JSON_TABLE('[1]', '$[*]' COLUMNS (x INT PATH '$', y VARCHAR(10) PATH '$')) AS j", true, true},
	{"SELECT 1 MEMBER OF ('[1, 2]')", true, true},
	{"SELECT a DIV (b) FROM t WHERE c REGEXP ('x') OR c RLIKE ('y')", true, true},
	{"SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY a) OVER () FROM t", false, false}, // MariaDB only

	// Keywords MariaDB does not reserve: written before "(" where no keyword may stand, MariaDB
	// calls a stored function of that name in the default database.
	{"SELECT columns()", false, false},
	{"SELECT against()", false, false},
	{"SELECT escape()", false, false},
	{"SELECT of()", false, false},
	{"SELECT lateral()", false, false},
	{"SELECT a FROM t WHERE b = 1 AND columns(b)", false, false},
	{"SELECT 1, lateral(2)", false, false},
	{"SELECT 'a' LIKE 'b' ESCAPE ('|')", true, true},
	{"SELECT * FROM t JOIN LATERAL (SELECT a FROM u WHERE u.b = t.b) AS l ON 1", true, true},
	{"SELECT * FROM t FOR SYSTEM_TIME AS OF (NOW())", true, true},

	// MySQL reads the quotes inside an optimizer hint: a "*/" in them does not end the hint,
	// so what a plain reading takes for a string after the hint is SQL to the server.
	{"SELECT /*+ BKA(`*/ 'a`) */ GET_LOCK('k', 1) /* ' */ FROM dual", false, false},
	{"SELECT /*+ SET_VAR(sql_mode = '*/ 1 ') */ RELEASE_LOCK('k') /* ' */", false, false},
	{"SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t", true, true},

	// Per-server schemas and system variables.
	{"SELECT * FROM information_schema.PROCESSLIST", false, false},
	{"SELECT * FROM INFORMATION_SCHEMA.tables", false, false},
	{"SELECT * FROM `performance_schema`.x", false, false},
	{"SELECT * FROM \"performance_schema\".x", false, false}, // ANSI_QUOTES
	{"SELECT user FROM mysql.user", false, false},
	{"SELECT * FROM mysql . user", false, false},
	{"SELECT * FROM sys.session", false, false},
	{"SELECT TENANT_ROLE FROM oceanbase.DBA_OB_TENANTS", false, false},
	{"SELECT a FROM t JOIN mysql.user u ON u.user = t.a", false, false},
	{"SELECT mysql FROM t", true, true}, // a column, not a schema
	{"SELECT t.mysql FROM t", true, true},
	{"SELECT @@hostname", false, false},
	{"SELECT @@server_id", false, false},
	{"SELECT @@session.sql_mode", false, false},
	{"SELECT @@autocommit", false, false},

	// Comments, strings and executable comments.
	{"SELECT 'GET_LOCK(' FROM t", true, true},
	{"SELECT \"mysql.user\", 'f()' FROM t", true, true},
	{"SELECT 1 /* GET_LOCK('k', 1) */", true, true},
	{"SELECT 1 -- IS_FREE_LOCK('k')\n", true, true},
	{"SELECT 1 # RELEASE_LOCK('k')", true, true},
	{"SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t", true, true}, // an optimizer hint
	{"SELECT /*!50000 GET_LOCK('k', 1) */", false, false},
	{"SELECT /*!50700 SQL_NO_CACHE */ a FROM t", false, false}, // another version reads it otherwise
	{"SELECT /*M!100100 1 */", false, false},
	{"/*!50000 SELECT 1 */", false, false},
	{"SELECT 1 /*!", false, false},
	{"SELECT 'it''s' FROM t", true, true},
	{"SELECT 'it\\'s' FROM t", false, false},                                    // NO_BACKSLASH_ESCAPES ends the string at \'
	{"SELECT 'C:\\', RELEASE_LOCK('k'), 'x\\'", false, false},                   // ... as here
	{"SELECT 'a\\\\' FROM t", true, true},                                       // an escaped backslash reads the same either way
	{"SELECT NEXT VALUE FOR s", false, false},                                   // MariaDB sequences, no parentheses
	{"SELECT PREVIOUS VALUE FOR s", false, false},                               //
	{"SELECT s.nextval FROM dual", false, false},                                // Oracle mode
	{"SELECT SQL_CALC_FOUND_ROWS * FROM t", false, false},                       // leaves a value for FOUND_ROWS()
	{"SELECT LAST_INSERT_ID(5)", false, false},                                  //
	{"SELECT a FROM t WHERE b = 'x' ORDER BY a LIMIT 10 OFFSET 20", true, true}, //
}

// Every family of the allow-list and of the denied functions, with a call of one member.
var familyCases = []struct {
	family string
	query  string
	safe   bool
}{
	{"mathematical", "SELECT ABS(a), CEIL(b), CEILING(b), FLOOR(c), ROUND(d, 2), TRUNCATE(d, 1), MOD(e, 3), POW(2, 3), POWER(2, 3), SQRT(4), EXP(1), LN(2), LOG(2), LOG2(8), LOG10(100), SIGN(-1), PI(), RAND(), SIN(1), COS(1), TAN(1), ASIN(1), ACOS(1), ATAN(1), ATAN2(1, 2), COT(1), DEGREES(1), RADIANS(1), CONV('a', 16, 2), CRC32('x') FROM t", true},
	{"string", "SELECT CONCAT(a, b), CONCAT_WS(',', a, b), SUBSTR(a, 1), SUBSTRING(a FROM 1 FOR 2), SUBSTRING_INDEX(a, '.', 1), LEFT(a, 1), RIGHT(a, 1), LOWER(a), LCASE(a), UPPER(a), UCASE(a), TRIM(LEADING 'x' FROM a), LTRIM(a), RTRIM(a), REPLACE(a, 'x', 'y'), REVERSE(a), REPEAT(a, 2), LENGTH(a), CHAR_LENGTH(a), CHARACTER_LENGTH(a), OCTET_LENGTH(a), BIT_LENGTH(a), LPAD(a, 5, ' '), RPAD(a, 5, ' '), LOCATE('x', a), INSTR(a, 'x'), POSITION('x' IN a), FIELD(a, 'x'), FIND_IN_SET(a, 'x,y'), ELT(1, a), FORMAT(1.5, 2), HEX(a), UNHEX('41'), ASCII(a), ORD(a), CHAR(65 USING utf8mb4), SPACE(2), QUOTE(a), SOUNDEX(a), STRCMP(a, b), TO_BASE64(a), FROM_BASE64(a), INSERT(a, 1, 2, 'x'), MAKE_SET(1, a), EXPORT_SET(5, 'Y', 'N'), WEIGHT_STRING(a AS CHAR(3)), MID(a, 1, 2), BIN(5), OCT(8) FROM t", true},
	{"regular expressions", "SELECT REGEXP_REPLACE(a, 'x', 'y'), REGEXP_SUBSTR(a, 'x'), REGEXP_INSTR(a, 'x') FROM t", true},
	{"character set and collation", "SELECT CHARSET(a), COLLATION(a), COERCIBILITY(a) FROM t", true},
	{"date and time", "SELECT NOW(), CURRENT_TIMESTAMP(), LOCALTIME(), LOCALTIMESTAMP(), SYSDATE(), CURDATE(), CURRENT_DATE(), CURTIME(), CURRENT_TIME(), UTC_DATE(), UTC_TIME(), UTC_TIMESTAMP(), UNIX_TIMESTAMP(), FROM_UNIXTIME(1), DATE(d), TIME(d), YEAR(d), MONTH(d), DAY(d), DAYOFMONTH(d), DAYOFWEEK(d), DAYOFYEAR(d), HOUR(d), MINUTE(d), SECOND(d), MICROSECOND(d), WEEK(d), WEEKDAY(d), WEEKOFYEAR(d), YEARWEEK(d), QUARTER(d), DAYNAME(d), MONTHNAME(d), LAST_DAY(d), DATE_ADD(d, INTERVAL 1 DAY), DATE_SUB(d, INTERVAL (1 + 1) DAY), ADDDATE(d, 1), SUBDATE(d, 1), ADDTIME(d, '1'), SUBTIME(d, '1'), DATEDIFF(d, e), TIMEDIFF(d, e), TIMESTAMPDIFF(MONTH, d, e), TIMESTAMPADD(DAY, 1, d), TIMESTAMP(d), DATE_FORMAT(d, '%Y'), TIME_FORMAT(d, '%H'), STR_TO_DATE('1', '%d'), GET_FORMAT(DATE, 'USA'), MAKEDATE(2020, 1), MAKETIME(1, 2, 3), PERIOD_ADD(202001, 1), PERIOD_DIFF(202001, 202002), SEC_TO_TIME(1), TIME_TO_SEC(d), TO_DAYS(d), FROM_DAYS(1), TO_SECONDS(d), EXTRACT(YEAR FROM d), CONVERT_TZ(d, '+00:00', '+01:00') FROM t", true},
	{"JSON", "SELECT JSON_EXTRACT(j, '$.a'), JSON_OBJECT('a', 1), JSON_ARRAY(1), JSON_VALUE(j, '$.a'), JSON_CONTAINS(j, '1'), JSON_UNQUOTE(j), JSON_SET(j, '$.a', 1), JSON_ARRAYAGG(a), JSON_OBJECTAGG(a, b) FROM t, JSON_TABLE(j, '$[*]' COLUMNS (x INT PATH '$')) AS jt", true},
	{"aggregate", "SELECT COUNT(*), COUNT(DISTINCT a), SUM(a), AVG(a), MIN(a), MAX(a), GROUP_CONCAT(a ORDER BY a SEPARATOR ','), BIT_AND(a), BIT_OR(a), BIT_XOR(a), STD(a), STDDEV(a), STDDEV_POP(a), STDDEV_SAMP(a), VARIANCE(a), VAR_POP(a), VAR_SAMP(a) FROM t GROUP BY a WITH ROLLUP", true},
	{"window", "SELECT ROW_NUMBER() OVER w, RANK() OVER w, DENSE_RANK() OVER w, PERCENT_RANK() OVER w, CUME_DIST() OVER w, NTILE(4) OVER w, LAG(a) OVER w, LEAD(a, 1) OVER w, FIRST_VALUE(a) OVER w, LAST_VALUE(a) OVER w, NTH_VALUE(a, 2) OVER w FROM t WINDOW w AS (PARTITION BY b ORDER BY c)", true},
	{"control flow and comparison", "SELECT IF(a, 1, 2), IFNULL(a, 0), NULLIF(a, 0), COALESCE(a, b), GREATEST(a, b), LEAST(a, b), ISNULL(a), INTERVAL(a, 1, 10) FROM t", true},
	{"cast", "SELECT CAST(a AS SIGNED), CONVERT(a, CHAR), CONVERT(a USING utf8mb4), BINARY(a) FROM t", true},
	{"hashing and encoding", "SELECT MD5(a), SHA(a), SHA1(a), SHA2(a, 256), CRC32(a), AES_ENCRYPT(a, 'k'), AES_DECRYPT(a, 'k'), COMPRESS(a), UNCOMPRESS(a), UNCOMPRESSED_LENGTH(a), RANDOM_BYTES(8), INET_ATON(a), INET_NTOA(1), INET6_ATON(a), INET6_NTOA(a), IS_IPV4(a), IS_IPV4_COMPAT(a), IS_IPV4_MAPPED(a), IS_IPV6(a), UUID(), BIT_COUNT(a) FROM t", true},
	{"spatial", "SELECT ST_Distance(g, ST_GeomFromText('POINT(1 1)')), ST_AsText(g), ST_X(g), MBRContains(g, POINT(1, 2)), ST_Contains(g, g) FROM t", true},
	{"full-text", "SELECT MATCH(a) AGAINST ('x') FROM t", true},
	{"XML", "SELECT ExtractValue(a, '/x'), UpdateXML(a, '/x', '<y/>') FROM t", true},
	{"default", "SELECT DEFAULT(a) FROM t", true},
	{"session identity", "SELECT DATABASE(), SCHEMA(), CURRENT_USER(), CURRENT_USER, CURRENT_ROLE()", true},
	{"sleep and benchmark", "SELECT SLEEP(0), BENCHMARK(1, 1)", true},

	{"named locks", "SELECT GET_LOCK('k', 1)", false},
	{"named locks", "SELECT IS_FREE_LOCK('k')", false},
	{"named locks", "SELECT IS_USED_LOCK('k')", false},
	{"named locks", "SELECT RELEASE_LOCK('k')", false},
	{"named locks", "SELECT RELEASE_ALL_LOCKS()", false},
	{"previous statement", "SELECT LAST_INSERT_ID()", false},
	{"previous statement", "SELECT FOUND_ROWS()", false},
	{"previous statement", "SELECT ROW_COUNT()", false},
	{"connection", "SELECT CONNECTION_ID()", false},
	{"client host", "SELECT USER()", false},
	{"client host", "SELECT SESSION_USER()", false},
	{"client host", "SELECT SYSTEM_USER()", false},
	{"sequences", "SELECT NEXTVAL(s)", false},
	{"sequences", "SELECT LASTVAL(s)", false},
	{"sequences", "SELECT SETVAL(s, 1)", false},
	{"sequences", "SELECT CURRVAL(s)", false},
	{"sequences", "SELECT NEXT VALUE FOR s", false},
	{"sequences", "SELECT PREVIOUS VALUE FOR s", false},
	{"replication", "SELECT MASTER_POS_WAIT('f', 4)", false},
	{"replication", "SELECT SOURCE_POS_WAIT('f', 4)", false},
	{"replication", "SELECT MASTER_GTID_WAIT('0-1-1', 0.5)", false},
	{"replication", "SELECT WAIT_FOR_EXECUTED_GTID_SET('u:1')", false},
	{"replication", "SELECT WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS('u:1')", false},
	{"server identity", "SELECT VERSION()", false},
	{"server identity", "SELECT UUID_SHORT()", false},
	{"server identity", "SELECT @@hostname", false},
	{"server identity", "SELECT @@server_id", false},
	{"server identity", "SELECT PS_CURRENT_THREAD_ID()", false},
	{"file system", "SELECT LOAD_FILE('/etc/passwd')", false},
	{"storage", "SELECT JSON_STORAGE_FREE(j) FROM t", false},
	{"password policy", "SELECT VALIDATE_PASSWORD_STRENGTH('x')", false},
	{"user-defined or stored", "SELECT my_udf(a) FROM t", false},
	{"built into MySQL 8.0 only", "SELECT ANY_VALUE(b), GROUPING(a), REGEXP_LIKE(a, 'x'), UUID_TO_BIN(a), FORMAT_BYTES(1) FROM t", false},
	{"built into MariaDB only", "SELECT NVL(a, 0), JSON_QUERY(j, '$.a'), TO_CHAR(d), MEDIAN(a) OVER () FROM t", false},
	{"user-defined or stored", "SELECT db.my_func(a) FROM t", false},
}

func TestReplicaRead(t *testing.T) {
	for _, tc := range replicaCases {
		if got := ReplicaRead(tc.query); got != tc.read {
			t.Errorf("ReplicaRead(%q) = %v, want %v", tc.query, got, tc.read)
		}
		if got := ReplicaSession(tc.query); got != tc.session {
			t.Errorf("ReplicaSession(%q) = %v, want %v", tc.query, got, tc.session)
		}
	}
}

func TestReplicaReadFamilies(t *testing.T) {
	for _, tc := range familyCases {
		if got := ReplicaRead(tc.query); got != tc.safe {
			t.Errorf("%s: ReplicaRead(%q) = %v, want %v", tc.family, tc.query, got, tc.safe)
		}
		if got := ReplicaSession(tc.query); got != tc.safe {
			t.Errorf("%s: ReplicaSession(%q) = %v, want %v", tc.family, tc.query, got, tc.safe)
		}
	}
}

// TestReplicaSafeFunction checks every listed name: a call of an allowed one alone is a
// replica read in any letter case, a denied one or a keyword is not a safe function.
func TestReplicaSafeFunction(t *testing.T) {
	for _, f := range families {
		for _, n := range strings.Fields(f.names) {
			if len(n) > maxName {
				t.Errorf("%s is longer than maxName", n)
			}
			safe := f.v == vSafe || f.v == vReserved
			for _, name := range []string{n, strings.ToUpper(n)} {
				if got := ReplicaSafeFunction(name); got != safe {
					t.Errorf("ReplicaSafeFunction(%q) = %v, want %v (%s)", name, got, safe, f.source)
				}
				if f.v == vKeyword {
					continue
				}
				q := "SELECT " + name + "(1)"
				if got := ReplicaRead(q); got != safe {
					t.Errorf("ReplicaRead(%q) = %v, want %v (%s)", q, got, safe, f.source)
				}
				if q := "SELECT db." + name + "(1)"; ReplicaRead(q) {
					t.Errorf("ReplicaRead(%q) = true, want false: a qualified call", q)
				}
				if q := "SELECT " + name + " (1)"; ReplicaRead(q) != (f.v == vReserved) {
					t.Errorf("ReplicaRead(%q) = %v, want %v", q, !(f.v == vReserved), f.v == vReserved)
				}
			}
		}
	}
	for _, n := range []string{"", "my_func", "is_free_lock", "Release_Lock", "in", "exists", strings.Repeat("a", 100)} {
		if ReplicaSafeFunction(n) {
			t.Errorf("ReplicaSafeFunction(%q) = true", n)
		}
	}
}

func TestSingleStatement(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"SELECT 1", true},
		{"SELECT 1;", true},
		{"SELECT 1 ; ; -- done", true},
		{"INSERT INTO t VALUES (1) /* c */ ;", true},
		{"SELECT 'a;b', `c;d`, \"e;f\" -- ;\n", true},
		{"SELECT 1 # ; SELECT 2", true},
		{"SELECT 'O\\'Brien'", true}, // one statement read either way
		{"SELECT 2 */*;0*/ 3", true}, // "*" then a comment: MariaDB answers 6
		{"", false},
		{";", false},
		{"/* only */ -- a comment", false},
		{"SELECT 1; SELECT 2", false},
		{"INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)", false},
		{"SELECT 1;; SELECT 2", false},
		{"SELECT 'unterminated", false},
		{"SELECT `unterminated", false},
		{"SELECT 1 /* unterminated", false},
		{"SELECT 1 /*! unterminated", false},
		{"SELECT 1 /*!99999 ; DELETE FROM t */", false}, // the server may run the comment
		{"/*!0;0*/", false},                             // digits an executable comment took for its version, then a leading ";"
		{"; SELECT 1", false},                           // an empty statement first
		{"BEGIN NOT ATOMIC SELECT 1; SELECT 2; END", false},
		// MySQL ends the hint at the "*/" after the quoted name, so the server reads two
		// statements where a plain reading sees a string.
		{"INSERT /*+ BKA(`*/ 'a`) */ INTO t VALUES (1); INSERT INTO t VALUES (2) /* ' */", false},
		{"SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1", true},
		// NO_BACKSLASH_ESCAPES reads two statements: ('C:\') ends the first.
		{"INSERT INTO t VALUES ('C:\\'); INSERT INTO t VALUES ('x'); -- '", false},
	} {
		if got := SingleStatement(tc.query); got != tc.want {
			t.Errorf("SingleStatement(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestReplicaReadDoesNotAllocate(t *testing.T) {
	for _, q := range []string{pointSelect, longSelect, "SET @a = 1, @b := CONCAT(@a, 'x')", "SELECT a INTO @v FROM t"} {
		if n := testing.AllocsPerRun(100, func() { ReplicaRead(q) }); n != 0 {
			t.Errorf("ReplicaRead(%q) allocates %v times", q, n)
		}
		if n := testing.AllocsPerRun(100, func() { ReplicaSession(q) }); n != 0 {
			t.Errorf("ReplicaSession(%q) allocates %v times", q, n)
		}
		if n := testing.AllocsPerRun(100, func() { SingleStatement(q) }); n != 0 {
			t.Errorf("SingleStatement(%q) allocates %v times", q, n)
		}
	}
}

func FuzzReplicaRead(f *testing.F) {
	for _, tc := range replicaCases {
		f.Add(tc.query)
	}
	for _, tc := range familyCases {
		f.Add(tc.query)
	}
	f.Fuzz(func(t *testing.T, q string) {
		read, session, single := ReplicaRead(q), ReplicaSession(q), SingleStatement(q)
		if single && rescanStatements(q) > 1 {
			t.Errorf("%q: SingleStatement but a plain reading finds a second statement", q)
		}
		if read {
			if !session {
				t.Errorf("%q: ReplicaRead but not ReplicaSession", q)
			}
			if !RetryableRead(q) {
				t.Errorf("%q: ReplicaRead but not RetryableRead", q)
			}
			if Classify(q) != 0 {
				t.Errorf("%q: ReplicaRead but Classify = %v", q, Classify(q))
			}
		}
		if !read && !session {
			return
		}
		if !single {
			t.Errorf("%q: replica-safe (read %v, session %v) but not a single statement", q, read, session)
		}
		if why := rescan(q); why != "" {
			t.Errorf("%q: replica-safe (read %v, session %v) but %s", q, read, session, why)
		}
	})
}

// rescan reads q again, byte by byte and apart from the scanner, and returns why a replica
// must not run it, or "" if it finds no reason: unbalanced parentheses, an unclosed quote or
// comment, a backslash before a string's own quote, a system variable, a per-server schema, a
// second statement, or a word before "(" that is neither an allowed function nor a keyword
// (unless it follows AS: a type or a derived table's name).
func rescan(q string) string {
	const (
		none = iota
		word
		quoted
		dot
		variable
		other
		str    // 'string' or "string"
		rparen // )
	)
	var (
		depth              int
		last               = none // kind of the last token
		lastWord, name     string // the last word; the last word or quoted name
		qualified, afterAs bool   // of lastWord
		prevAs             bool   // lastWord is AS
		before             = none // kind of the token before lastWord
		beforeWord         string // the word before lastWord, if before is word
		ended, exec        bool
	)
	ident := func(c byte) bool {
		return c == '_' || c == '$' || c >= 0x80 || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	for i := 0; i < len(q); {
		c := q[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' {
			i++
			continue
		}
		switch {
		case c == '#', c == '-' && i+1 < len(q) && q[i+1] == '-' && (i+2 == len(q) || q[i+2] <= ' '):
			for i < len(q) && q[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			if strings.HasPrefix(q[i:], "/*!") || strings.HasPrefix(q[i:], "/*M!") {
				i += strings.IndexByte(q[i:], '!') + 1
				for i < len(q) && '0' <= q[i] && q[i] <= '9' {
					i++
				}
				exec = true
				continue
			}
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return "an unclosed comment"
			}
			i += 2 + end + 2
			continue
		case c == '*' && exec && i+1 < len(q) && q[i+1] == '/':
			exec = false
			i += 2
			continue
		}
		if ended && c != ';' {
			return "a second statement"
		}
		kind := other
		switch {
		case ident(c):
			j := i
			for j < len(q) && ident(q[j]) {
				j++
			}
			w := strings.ToLower(q[i:j])
			afterAs = last == word && prevAs
			qualified = last == dot
			prevAs = w == "as"
			before, beforeWord = last, lastWord
			lastWord, name = w, w
			kind = word
			i = j
		case c == '\'' || c == '"' || c == '`':
			j, closed := i+1, false
			for j < len(q) && !closed {
				switch {
				case q[j] == '\\' && c != '`':
					if j+1 < len(q) && q[j+1] == c {
						return "a backslash before a string's quote"
					}
					j += 2
				case q[j] == c && j+1 < len(q) && q[j+1] == c:
					j += 2
				case q[j] == c:
					closed = true
					j++
				default:
					j++
				}
			}
			if !closed {
				return "an unclosed quote"
			}
			name = strings.ToLower(q[i+1 : j-1])
			kind = quoted
			if c != '`' {
				kind = str
			}
			i = j
		case c == '@' && i+1 < len(q) && q[i+1] == '@':
			return "a system variable"
		case c == '@': // a user variable: @name, @'name', @"name", @`name`
			j := i + 1
			if j < len(q) && (q[j] == '\'' || q[j] == '"' || q[j] == '`') {
				k := strings.IndexByte(q[j+1:], q[j])
				if k < 0 {
					return "an unclosed quote"
				}
				j += k + 2
			} else {
				for j < len(q) && (ident(q[j]) || q[j] == '.') {
					j++
				}
			}
			kind = variable
			i = j
		case c == '(':
			depth++
			switch last {
			case quoted, str, variable:
				return "a name that is not a function before ("
			case word:
				if qualified {
					return "a qualified call of " + lastWord
				}
				// Keywords MariaDB does not reserve, where only the keyword can stand.
				inPlace := lastWord == "against" && before == rparen ||
					(lastWord == "columns" || lastWord == "escape") && before == str ||
					lastWord == "of" && before == word && beforeWord == "member" ||
					lastWord == "lateral" && before == word && beforeWord == "join"
				if !afterAs && !inPlace && !ReplicaSafeFunction(lastWord) && verdictOf(lastWord) != vKeyword {
					return "a call of " + lastWord
				}
			}
			i++
		case c == ')':
			depth--
			if depth < 0 {
				return "a ) without ("
			}
			kind = rparen
			i++
		case c == '.':
			if (last == word || last == quoted || last == str) && serverSchema(name) {
				return "the schema " + name
			}
			kind = dot
			i++
		case c == ';':
			ended = true
			i++
		default:
			i++
		}
		if kind != word {
			prevAs = false
		}
		last = kind
	}
	if depth != 0 {
		return "unbalanced parentheses"
	}
	if exec {
		return "an unclosed executable comment"
	}
	return ""
}

// rescanStatements counts the statements of q, up to 2, reading strings, quoted identifiers
// and comments byte by byte apart from the scanner (executable comments count as SQL), and 0
// if a quote or comment is never closed.
func rescanStatements(q string) int {
	n, in, exec := 0, false, false
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#', c == '-' && i+1 < len(q) && q[i+1] == '-' && (i+2 == len(q) || q[i+2] <= ' '):
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case strings.HasPrefix(q[i:], "/*!"), strings.HasPrefix(q[i:], "/*M!"):
			if !strings.Contains(q[i:], "*/") {
				return 0
			}
			i += strings.IndexByte(q[i:], '!') + 1 // the contents are SQL; "*/" is read below
			exec = true
		case exec && strings.HasPrefix(q[i:], "*/"):
			// Only an executable comment ends at "*/"; elsewhere "*" is an operator and
			// "/*" may start a comment ("*/*;*/" is one statement).
			i += 2
			exec = false
		case strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return 0
			}
			i += 2 + end + 2
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(q) && q[j] != c {
				if q[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(q) {
				return 0
			}
			i = j + 1 // a doubled quote reads as two strings: the same boundaries
			in = true
		case c == ';':
			if in {
				n++
				in = false
			}
			i++
		default:
			if n > 0 {
				return 2
			}
			in = true
			i++
		}
	}
	if in {
		n++
	}
	return n
}

// oneFlavour lists built-ins of only one of MySQL 8.0 and MariaDB 10.11. The other server
// reads such a name before "(" as a call of the stored function of that name in the default
// database, which may write or read per-server state, so neither may be proven safe.
// MariaDB 10.11 was asked (CREATE FUNCTION <name> gives no "same name as a native function"
// note, and SELECT <name>() then calls it); the MySQL 8.0 names are those of the MySQL 8.0
// Reference Manual, chapter 12.
var oneFlavour = map[string]string{
	"MySQL 8.0 only": "regexp_like json_schema_valid json_schema_validation_report geomcollection " +
		"st_buffer_strategy st_collect st_frechetdistance st_geohash st_geomcollfromtxt " +
		"st_hausdorffdistance st_isvalid st_latfromgeohash st_latitude st_lineinterpolatepoint " +
		"st_lineinterpolatepoints st_longfromgeohash st_longitude st_makeenvelope " +
		"st_numinteriorring st_pointatdistance st_pointfromgeohash st_simplify st_swapxy " +
		"st_transform st_validate mbrcoveredby mbrcovers any_value bin_to_uuid grouping is_uuid " +
		"uuid_to_bin format_bytes format_pico_time",
	"MariaDB only": "chr lengthb natural_sort_key sformat add_months to_char nvl nvl2 json_query " +
		"json_compact json_detailed json_loose json_exists json_normalize json_equals median " +
		"percentile_cont percentile_disc st_boundary st_relate st_pointonsurface",
}

func TestReplicaReadOneFlavourBuiltins(t *testing.T) {
	for flavour, names := range oneFlavour {
		for _, n := range strings.Fields(names) {
			q := "SELECT " + n + "(1)"
			if ReplicaRead(q) || ReplicaSession(q) {
				t.Errorf("%s: %q is replica-safe, but the other server may call a stored function %s", flavour, q, n)
			}
		}
	}
}
