package sqlclass

import "strings"

// verdict is what the word before a "(" is, for ReplicaRead and ReplicaSession.
type verdict uint8

const (
	vUnknown  verdict = iota // not listed: a user-defined or stored function, or a built-in not proven safe
	vDenied                  // a built-in whose answer depends on the server or another session
	vSafe                    // a built-in a replica answers as the primary; "(" must follow directly
	vReserved                // as vSafe, and a reserved word: blanks may come before "("
	vKeyword                 // a keyword that may come before "(" without calling anything
)

// family is a group of function names with one verdict and the reference that lists them.
type family struct {
	source string  // where the names are documented
	v      verdict // vSafe, vReserved, vDenied or vKeyword
	names  string  // lower case, separated by blanks
}

// Sources: "MySQL 8.0" is the MySQL 8.0 Reference Manual, chapter 12 "Functions and
// Operators", by section title; "MariaDB" is the MariaDB Knowledge Base, "Built-in Functions",
// by page title.
//
// A replica answers a function exactly as the primary would when the answer depends only on
// the arguments, the rows the statement reads (which replication copies), the session's own
// settings (time_zone, sql_mode, character sets: the same on every connection lbd opens for a
// DSN) or the clock. Everything else is denied, and so is every name not listed here: a
// user-defined (loadable) or stored function, or a built-in this list does not know yet, runs
// on the primary.
//
// Only built-ins of both MySQL 8.0 and MariaDB 10.11 are listed. The other server reads a
// name built into one of them only as a call of the stored function of that name in the
// default database: MySQL 8.0 only, such as ANY_VALUE, GROUPING, REGEXP_LIKE, BIN_TO_UUID,
// UUID_TO_BIN, IS_UUID, FORMAT_BYTES and most of its ST_ functions that MariaDB lacks;
// MariaDB only, such as NVL, NVL2, CHR, TO_CHAR, ADD_MONTHS, SFORMAT, JSON_QUERY, JSON_EXISTS,
// MEDIAN and PERCENTILE_CONT, ST_BOUNDARY, ST_RELATE. A text calling one runs on the primary.
//
// In the default SQL mode MySQL reads a built-in name followed by blanks or a comment before
// its "(" as an identifier, and may then call a stored function of that name in the default
// database (section "Function Name Parsing and Resolution" of the language structure
// chapter). So an allowed name counts as the built-in only when "(" follows it directly; the
// names in the vReserved families are reserved words in MySQL and MariaDB, which no stored
// function can have unquoted, and may have blanks before "(".
var families = [...]family{
	// Safe built-ins.
	{"MySQL 8.0 12.6.2 Mathematical Functions; MariaDB Numeric Functions", vSafe,
		"abs acos asin atan atan2 ceil ceiling conv cos cot crc32 degrees exp floor ln log " +
			"log10 log2 oct pi pow power radians rand round sign sin sqrt tan truncate"},
	{"MySQL 8.0 12.8 String Functions and Operators; MariaDB String Functions", vSafe,
		"ascii bin bit_length char_length character_length concat concat_ws elt export_set " +
			"field find_in_set format from_base64 hex instr lcase length locate lower lpad ltrim " +
			"make_set mid octet_length ord position quote reverse rpad rtrim soundex space " +
			"substr substring substring_index to_base64 trim ucase unhex upper weight_string"},
	{"MySQL 8.0 12.8.1 String Comparison Functions and Operators; MariaDB String Functions", vSafe,
		"strcmp"},
	{"MySQL 8.0 12.8.2 Regular Expressions; MariaDB Regular Expressions Functions", vSafe,
		"regexp_instr regexp_replace regexp_substr"},
	{"MySQL 8.0 12.7 Date and Time Functions; MariaDB Date & Time Functions", vSafe,
		"adddate addtime convert_tz curdate curtime date date_add date_format date_sub " +
			"datediff day dayname dayofmonth dayofweek dayofyear extract from_days " +
			"from_unixtime get_format hour last_day makedate maketime microsecond minute month " +
			"monthname now period_add period_diff quarter sec_to_time second str_to_date " +
			"subdate subtime sysdate time time_format time_to_sec timediff timestamp " +
			"timestampadd timestampdiff to_days to_seconds unix_timestamp week weekday " +
			"weekofyear year yearweek"},
	{"MySQL 8.0 12.5 Flow Control Functions, 12.4.2 Comparison Functions and Operators; MariaDB Control Flow Functions", vSafe,
		"ifnull nullif coalesce greatest least isnull"},
	{"MySQL 8.0 12.10 Cast Functions and Operators; MariaDB Conversion Functions", vSafe,
		"cast"},
	{"MySQL 8.0 12.12 Bit Functions and Operators; MariaDB Bit Functions and Operators", vSafe,
		"bit_count"},
	{"MySQL 8.0 12.13 Encryption and Compression Functions; MariaDB Encryption, Hashing and Compression Functions", vSafe,
		"aes_decrypt aes_encrypt compress md5 random_bytes sha sha1 sha2 uncompress " +
			"uncompressed_length"},
	{"MySQL 8.0 12.11 XML Functions; MariaDB XML Functions", vSafe,
		"extractvalue updatexml"},
	{"MySQL 8.0 12.17 JSON Functions; MariaDB JSON Functions", vSafe,
		"json_array json_array_append json_array_insert json_contains json_contains_path " +
			"json_depth json_extract json_insert json_keys json_length json_merge " +
			"json_merge_patch json_merge_preserve json_object json_overlaps json_pretty " +
			"json_quote json_remove json_replace json_search json_set json_table json_type " +
			"json_unquote json_valid json_value"},
	{"MySQL 8.0 12.19 Aggregate Functions; MariaDB Aggregate Functions", vSafe,
		"avg bit_and bit_or bit_xor count group_concat json_arrayagg json_objectagg max min " +
			"std stddev stddev_pop stddev_samp sum var_pop var_samp variance"},
	{"MySQL 8.0 12.20 Window Functions; MariaDB Window Functions", vSafe,
		"cume_dist dense_rank first_value lag last_value lead nth_value ntile percent_rank " +
			"rank row_number"},
	{"MySQL 8.0 12.16 Spatial Analysis Functions; MariaDB Geographic & Geometric Features", vSafe,
		"point linestring polygon multipoint multilinestring multipolygon geometrycollection " +
			"st_area st_asbinary st_aswkb st_asgeojson st_astext st_aswkt " +
			"st_buffer st_centroid st_contains st_convexhull " +
			"st_crosses st_difference st_dimension st_disjoint st_distance st_distance_sphere " +
			"st_endpoint st_envelope st_equals st_exteriorring " +
			"st_geomcollfromtext st_geometrycollectionfromtext " +
			"st_geomcollfromwkb st_geometrycollectionfromwkb st_geometryn st_geometrytype " +
			"st_geomfromgeojson st_geomfromtext st_geometryfromtext st_geomfromwkb " +
			"st_geometryfromwkb st_interiorringn st_intersection " +
			"st_intersects st_isclosed st_isempty st_issimple " +
			"st_length st_linefromtext st_linestringfromtext st_linefromwkb " +
			"st_linestringfromwkb st_mlinefromtext " +
			"st_multilinestringfromtext st_mlinefromwkb st_multilinestringfromwkb " +
			"st_mpointfromtext st_multipointfromtext st_mpointfromwkb st_multipointfromwkb " +
			"st_mpolyfromtext st_multipolygonfromtext st_mpolyfromwkb st_multipolygonfromwkb " +
			"st_numgeometries st_numinteriorrings st_numpoints st_overlaps " +
			"st_pointfromtext st_pointfromwkb st_pointn " +
			"st_polyfromtext st_polygonfromtext st_polyfromwkb st_polygonfromwkb " +
			"st_srid st_startpoint st_symdifference st_touches " +
			"st_union st_within st_x st_y " +
			"mbrcontains mbrdisjoint mbrequals mbrintersects " +
			"mbroverlaps mbrtouches mbrwithin"},
	{"MySQL 8.0 12.15 Information Functions (the session's own character set, collation and " +
		"account, the same on every connection of one DSN); MariaDB Information Functions", vSafe,
		"charset coercibility collation current_role benchmark"},
	{"MySQL 8.0 12.23 Miscellaneous Functions; MariaDB Miscellaneous Functions", vSafe,
		"inet_aton inet_ntoa inet6_aton inet6_ntoa is_ipv4 " +
			"is_ipv4_compat is_ipv4_mapped is_ipv6 name_const sleep uuid"},
	// Built-ins that are reserved words, from the sections above: CHAR, INSERT, LEFT, REPEAT,
	// REPLACE, RIGHT (12.8), MOD (12.6.2), CURRENT_DATE, CURRENT_TIME, CURRENT_TIMESTAMP,
	// LOCALTIME, LOCALTIMESTAMP, UTC_DATE, UTC_TIME, UTC_TIMESTAMP (12.7), IF (12.5), INTERVAL
	// (12.4.2), CONVERT, BINARY (12.10), MATCH (12.9 Full-Text Search Functions), DATABASE,
	// SCHEMA, CURRENT_USER (12.15), DEFAULT (12.23).
	{"MySQL 8.0 and MariaDB reserved words naming the built-ins above", vReserved,
		"char insert left repeat replace right mod current_date current_time " +
			"current_timestamp localtime localtimestamp utc_date utc_time utc_timestamp if " +
			"interval convert binary match database schema current_user default"},

	// Denied built-ins. Unknown names are denied too; these are listed so that the reason is
	// written down and tested.
	{"MySQL 8.0 12.14 Locking Functions; MariaDB Miscellaneous Functions: named locks live on one server", vDenied,
		"get_lock release_lock release_all_locks is_free_lock is_used_lock"},
	{"MySQL 8.0 12.15 Information Functions; MariaDB Information Functions: values of the " +
		"session that ran the previous statement, or of this connection", vDenied,
		"last_insert_id found_rows row_count connection_id"},
	{"MySQL 8.0 12.15 Information Functions; MariaDB Information Functions: USER(), " +
		"SESSION_USER() and SYSTEM_USER() name the client host as this server sees it", vDenied,
		"user session_user system_user"},
	{"MariaDB Sequence Functions (and OceanBase's Oracle mode): a sequence's state on one server; " +
		"NEXT VALUE FOR and PREVIOUS VALUE FOR take no parentheses and Classify finds them", vDenied,
		"nextval lastval setval currval"},
	{"MySQL 8.0 12.18 Replication Functions; MariaDB Galera and GTID functions: positions of this server", vDenied,
		"master_pos_wait source_pos_wait master_gtid_wait wait_for_executed_gtid_set " +
			"wait_until_sql_thread_after_gtids binlog_gtid_pos wsrep_last_seen_gtid " +
			"wsrep_last_written_gtid wsrep_sync_wait_upto_gtid"},
	{"MySQL 8.0 12.15 Information Functions, 12.21 Performance Schema Functions, 12.23 " +
		"Miscellaneous Functions: the server's identity (UUID_SHORT() starts with server_id)", vDenied,
		"version icu_version uuid_short ps_current_thread_id ps_thread_id"},
	{"MySQL 8.0 12.8 String Functions and Operators: LOAD_FILE reads this server's file system", vDenied,
		"load_file"},
	{"MySQL 8.0 12.17 JSON Functions: the storage of this server's copy of a column", vDenied,
		"json_storage_free json_storage_size"},
	{"MySQL 8.0 12.13 Encryption and Compression Functions: this server's password policy; " +
		"MariaDB: this server's DES key file", vDenied,
		"validate_password_strength des_encrypt des_decrypt"},

	// Keywords that may stand before "(" without calling a function: subqueries, derived
	// tables and joins, row constructors, index hints, window specifications, full-text
	// search, the members of a condition, and the types of CAST, CONVERT and JSON_TABLE
	// (reserved words, so never a stored function). A keyword missing here only sends a read
	// to the primary.
	{"MySQL 8.0 and MariaDB SELECT syntax", vKeyword,
		"in exists from join straight_join as on using and or not xor where having select " +
			"union intersect except all any some distinct values row over partition by when " +
			"then else case like between is index key window group " +
			"regexp rlike div decimal dec numeric float double real " +
			"varchar varbinary int integer bigint smallint tinyint mediumint unsigned signed"},
}

// contextKeyword reports whether w, followed by "(", is one of the keywords that MariaDB does
// not reserve, written where only the keyword can stand: before and w are the token and the
// word (if any) before w. Anywhere else MariaDB reads such a word before "(" as a call of the
// stored function of that name in the default database (SELECT columns() calls one).
//
//   - AGAINST after MATCH (cols): after ")";
//   - COLUMNS after the path of JSON_TABLE or NESTED PATH, ESCAPE after the pattern of LIKE:
//     after a string;
//   - OF after MEMBER (MEMBER OF (json)); after AS (AS OF) the word is not checked at all;
//   - LATERAL after JOIN. After "," it could be a call in a select list, so that text goes
//     to the primary.
func contextKeyword(w string, before tok, beforeWord string) bool {
	switch {
	case len(w) == len("against") && equalLower(w, "against"):
		return before == tokRParen
	case len(w) == len("columns") && equalLower(w, "columns"),
		len(w) == len("escape") && equalLower(w, "escape"):
		return before == tokString
	case len(w) == len("of") && equalLower(w, "of"):
		return before == tokWord && len(beforeWord) == len("member") && equalLower(beforeWord, "member")
	case len(w) == len("lateral") && equalLower(w, "lateral"):
		return before == tokWord && len(beforeWord) == len("join") && equalLower(beforeWord, "join")
	}
	return false
}

// verdicts maps every listed name to its verdict.
var verdicts = func() map[string]verdict {
	m := make(map[string]verdict)
	for _, f := range families {
		for _, n := range strings.Fields(f.names) {
			if _, dup := m[n]; dup {
				panic("sqlclass: " + n + " listed twice")
			}
			m[n] = f.v
		}
	}
	return m
}()

// maxName is the length of the longest listed name; longer words are unknown.
const maxName = 40

// verdictOf returns the verdict of the word w in any letter case. It does not allocate.
func verdictOf(w string) verdict {
	if len(w) > maxName {
		return vUnknown
	}
	var buf [maxName]byte
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return verdicts[string(buf[:len(w)])]
}

// ReplicaSafeFunction reports whether name, in any letter case and unqualified, is a built-in
// function a replica answers exactly as the primary would: a function on the allow-list of
// this package. It is false for denied built-ins (named locks, LAST_INSERT_ID, sequences,
// replication waits, the server's identity, ...), for keywords, and for every name it does not
// know, such as a user-defined or stored function. It does not allocate.
func ReplicaSafeFunction(name string) bool {
	v := verdictOf(name)
	return v == vSafe || v == vReserved
}

// ServerSchema reports whether name, in any letter case, is a schema whose tables differ from
// server to server: information_schema, performance_schema, mysql, sys, oceanbase. ReplicaRead
// refuses a text naming one; a connection whose default database is one cannot use it, since
// an unqualified table name does not show its schema.
func ServerSchema(name string) bool { return serverSchema(name) }

// serverSchema reports whether w names, in any letter case, a schema whose tables differ from
// server to server: information_schema, performance_schema, mysql, sys, oceanbase.
func serverSchema(w string) bool {
	switch len(w) {
	case len("sys"):
		return equalLower(w, "sys")
	case len("mysql"):
		return equalLower(w, "mysql")
	case len("oceanbase"):
		return equalLower(w, "oceanbase")
	case len("information_schema"):
		return equalLower(w, "information_schema") || equalLower(w, "performance_schema")
	}
	return false
}
