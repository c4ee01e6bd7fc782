// Package sqlclass tells, from the text of a query alone, whether running it ties a logical
// connection to the physical connection (and so the proxy) it ran on.
//
// lbd may run the statements of one logical connection on different physical connections, to
// different proxies. That is only safe while the server holds nothing for the logical
// connection between statements. MySQL keeps user variables, temporary tables, locks,
// prepared statements and SET values per session, and an open transaction lives on one
// connection; OBProxy likewise cannot move a request that reads found_rows() or row_count() to
// another node, because those values belong to the session that ran the previous statement.
// Classify finds these cases with a single pass over the text: a small lexer that understands
// MySQL comments, executable comments, strings and quoted identifiers, and a per-statement
// state machine keyed on the first keyword. It is deliberately not a parser; where it must
// guess, it guesses towards keeping the connection bound.
//
// RetryableRead answers a related question with the same lexer: is a text a single read that
// may run again on another physical connection after a failure (GORM's RetryReads asks it).
// SingleStatement tells whether a text holds exactly one statement, so that a refusal of it
// means none of it ran.
//
// # Replica-safe by proof
//
// The read/write split sends a statement to a replica only when ReplicaRead proves that the
// replica gives the answer the primary would give; ReplicaSession proves the same for a
// replica connection that already holds the logical connection's session state (user
// variables, a read-only transaction). The proof is by allow-list, not by the absence of a
// known danger: the text must be one plain SELECT (or, for ReplicaSession, a SET of user
// variables), every function it calls must be a built-in whose answer depends only on its
// arguments, the rows read, the session's own settings or the clock (ReplicaSafeFunction;
// the list is in allow.go, by family, with the MySQL and MariaDB references), and it must
// read no system variable and no table of a schema that differs from server to server
// (information_schema, performance_schema, mysql, sys, oceanbase). Anything the lexer cannot
// read, and every name it does not know (user-defined and stored functions, built-ins not
// listed yet, named locks, LAST_INSERT_ID(), sequences, replication waits, ...), goes to the
// primary. A missing entry only costs a read on the primary. What the text does not show
// cannot be proven: an unqualified table of a DSN whose default database is one of the
// schemas above, or a server configured apart from the others (time zone tables, full-text
// settings).
package sqlclass

import "strconv"

// Effect is a set of effects of a SQL text that matter when its logical connection may move
// to another physical connection afterwards. The zero value means none.
type Effect uint8

const (
	// BeginsTx: after the text a transaction is open. Set by BEGIN and BEGIN WORK (only as the
	// whole statement, so BEGIN NOT ATOMIC is not a transaction), START TRANSACTION with any
	// characteristics, COMMIT AND CHAIN, ROLLBACK AND CHAIN, and XA START / XA BEGIN.
	BeginsTx Effect = 1 << iota

	// EndsTx: after the text no transaction is open. Set by COMMIT and ROLLBACK with optional
	// WORK, AND NO CHAIN and [NO] RELEASE, and by XA COMMIT / XA ROLLBACK. ROLLBACK [WORK] TO
	// [SAVEPOINT] keeps the transaction open and is not EndsTx; neither is AND CHAIN RELEASE,
	// which MySQL rejects.
	//
	// In a text with several statements only the last transaction-control statement counts,
	// so at most one of BeginsTx and EndsTx is set.
	EndsTx

	// Session: the text changes state that lives on the physical connection, because MySQL
	// keeps user variables, temporary tables, locks and SET values per session. Set by any SET
	// statement, USE, any user variable (@v, @'v', @"v", @`v`; not system variables @@v, and
	// not the @ of a quoted account name 'user'@'host'), CREATE TEMPORARY TABLE, LOCK
	// statements, FLUSH ... WITH READ LOCK / FOR EXPORT, GET_LOCK(), SQL prepared statements
	// (PREPARE, EXECUTE, DEALLOCATE / DROP PREPARE), HANDLER, every XA statement, and CALL
	// (a procedure may do any of these; a stored function called inside a query may too, and
	// cannot be seen). A text with an unterminated quote is Session too: under
	// NO_BACKSLASH_ESCAPES the server reads 'C:\' as closed, so the rest is unknown.
	Session

	// ProducesResult: the next statement may read a value this text leaves behind through
	// LAST_INSERT_ID(), ROW_COUNT() or FOUND_ROWS(). Set by INSERT, REPLACE, UPDATE, DELETE,
	// LOAD, CALL (also as the main verb after WITH), by SQL_CALC_FOUND_ROWS, and by
	// LAST_INSERT_ID(expr) with an argument. Never set for EXPLAIN, DESCRIBE or SHOW.
	ProducesResult

	// ReadsResult: the text reads a value the previous statement left in the session. Set by a
	// call of FOUND_ROWS(), ROW_COUNT() or LAST_INSERT_ID() (with or without an argument),
	// by the system variables @@last_insert_id and @@identity, and by SHOW WARNINGS, SHOW
	// ERRORS and GET DIAGNOSTICS. OBProxy cannot move such a request to another node.
	ReadsResult

	// TxInside: a statement of the text began a transaction that a later one ended, as in
	// "BEGIN; INSERT ...; COMMIT". When such a text fails part-way the server stops at the
	// error, and the transaction may still be open.
	TxInside
)

var effectNames = [...]string{"BeginsTx", "EndsTx", "Session", "ProducesResult", "ReadsResult", "TxInside"}

// Has reports whether all bits of f are set in e. Has(0) is true.
func (e Effect) Has(f Effect) bool { return e&f == f }

// String returns the set bits joined by "|" in declaration order, such as
// "BeginsTx|Session", or "none" for the empty set. Unknown bits appear in hexadecimal.
func (e Effect) String() string {
	if e == 0 {
		return "none"
	}
	var buf [64]byte
	b := buf[:0]
	for i, n := range effectNames {
		if e&(1<<i) != 0 {
			if len(b) > 0 {
				b = append(b, '|')
			}
			b = append(b, n...)
		}
	}
	if rest := e >> len(effectNames) << len(effectNames); rest != 0 {
		if len(b) > 0 {
			b = append(b, '|')
		}
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, uint64(rest), 16)
	}
	return string(b)
}

// Classify returns the effects of query, which may hold several statements separated by ";".
// Keywords are case-insensitive; strings, quoted identifiers and comments are ignored, except
// executable comments /*! ... */, whose contents count as SQL. Function names count only as
// unqualified calls: row_count() is a call, t.row_count and db.row_count() are not. Classify
// never panics, does not allocate, and reads the text once.
func Classify(query string) Effect {
	sc := newScanner(query)
	var (
		eff    Effect // Session, ProducesResult and ReadsResult so far
		tx     Effect // effect of the last transaction-control statement
		st     stmt
		prev   = tokEOF // previous token: a word after tokDot is qualified
		fn     kw       // function name waiting for its "("
		arg    bool     // just saw "LAST_INSERT_ID(": does an argument follow?
		last   kw       // the previous token's keyword, for NEXT VALUE FOR / PREVIOUS VALUE FOR
		opened bool     // some statement began a transaction
	)
	for {
		t := sc.next()
		if arg {
			arg = false
			if t != tokRParen {
				st.produces = true
			}
		}
		if fn != kwNone && t == tokLParen {
			switch fn {
			case kwGetLock:
				eff |= Session
			case kwLastInsertID:
				eff |= ReadsResult
				arg = true
			case kwNextval, kwSetval: // MariaDB sequences: the next LASTVAL() reads this
				st.produces = true
			default:
				eff |= ReadsResult
			}
		}
		fn = kwNone
		prevKw := last
		last = kwNone

		switch t {
		case tokEOF, tokSemi:
			eff |= st.finish(&tx)
			if tx == BeginsTx {
				opened = true
			}
			if t == tokEOF {
				if sc.unterminated {
					eff |= Session
				}
				if opened && tx != BeginsTx {
					eff |= TxInside
				}
				return eff | tx
			}
			st = stmt{}
		case tokWord:
			k := lookup(sc.word)
			if prev == tokDot {
				// A qualified name is never a keyword or a builtin, but seq.NEXTVAL and
				// seq.CURRVAL are sequence calls (Oracle mode of OceanBase and MariaDB).
				switch k {
				case kwNextval:
					st.produces = true
				case kwCurrval:
					eff |= ReadsResult
				}
				k = kwNone
			}
			switch k {
			case kwFoundRows, kwRowCount, kwLastInsertID, kwGetLock, kwNextval, kwSetval, kwLastval:
				fn = k
			case kwCalcFoundRows:
				st.produces = true
			case kwValue: // NEXT VALUE FOR s, PREVIOUS VALUE FOR s (MariaDB sequences)
				switch prevKw {
				case kwNext:
					st.produces = true
				case kwPrevious:
					eff |= ReadsResult
				}
			}
			last = k
			eff |= st.word(k)
		case tokUserVar:
			eff |= Session
			st.other()
		case tokSysVar:
			if k := lookup(sc.word); k == kwLastInsertID || k == kwIdentity {
				eff |= ReadsResult
			}
			st.other()
		case tokLParen:
			if st.kind != kwNone {
				st.other()
			}
			st.depth++
		case tokRParen:
			st.depth--
			st.other()
		default:
			st.other()
		}
		prev = t
	}
}

// stmt is the state of the statement being scanned.
type stmt struct {
	kind     kw     // first keyword; kwOther if the statement starts otherwise
	n        int    // tokens after the first keyword
	depth    int    // parenthesis depth
	base     int    // depth of the first keyword
	produces bool   // ProducesResult unless the statement only describes another
	tx       Effect // START TRANSACTION, XA: its transaction effect, if any

	// COMMIT / ROLLBACK grammar: COMMIT [WORK] [AND [NO] CHAIN] [[NO] RELEASE].
	end            endState
	chain, release bool

	bad   bool // BEGIN, COMMIT or ROLLBACK with unexpected tokens: not transaction control
	table bool // CREATE: TABLE seen
}

type endState uint8

const (
	endStart   endState = iota // after COMMIT / ROLLBACK
	endWork                    // after WORK
	endAnd                     // after AND
	endAndNo                   // after AND NO
	endChain                   // after [NO] CHAIN
	endNo                      // after NO, expecting RELEASE
	endRelease                 // after [NO] RELEASE
)

// word handles an unquoted word; k is its keyword, or kwNone.
func (st *stmt) word(k kw) Effect {
	if st.kind == kwNone {
		st.base = st.depth
		if k < kwBegin || k > kwValues {
			st.kind = kwOther
			return 0
		}
		st.kind = k
		return st.start()
	}
	pos := st.n
	st.n++
	switch st.kind {
	case kwBegin:
		if pos != 0 || k != kwWork {
			st.bad = true // BEGIN NOT ATOMIC, a compound statement
		}
	case kwStart:
		if pos == 0 && k == kwTransaction {
			st.tx = BeginsTx
		}
	case kwCommit, kwRollback:
		st.endWord(k)
	case kwXA:
		if pos == 0 {
			switch k {
			case kwStart, kwBegin:
				st.tx = BeginsTx
			case kwCommit, kwRollback:
				st.tx = EndsTx
			}
		}
	case kwCreate:
		switch {
		case k == kwTable:
			st.table = true
		case k == kwTemporary && pos <= 2 && !st.table: // CREATE [OR REPLACE] TEMPORARY TABLE
			return Session
		}
	case kwDrop:
		if pos == 0 && k == kwPrepare {
			return Session
		}
	case kwFlush:
		if k == kwLock || k == kwExport { // FLUSH TABLES WITH READ LOCK, ... FOR EXPORT
			return Session
		}
	case kwShow:
		if k == kwWarnings || k == kwErrors {
			return ReadsResult
		}
	case kwWith:
		// WITH [RECURSIVE] name [(cols)] AS (query), ... verb: the main verb is the first
		// statement keyword outside the parentheses.
		switch k {
		case kwSelect, kwTable, kwValues, kwInsert, kwReplace, kwUpdate, kwDelete:
			if st.depth == st.base {
				st.kind = k
				return st.start()
			}
		}
	}
	return 0
}

// start returns the effects of the first keyword alone.
func (st *stmt) start() Effect {
	switch st.kind {
	case kwSet, kwUse, kwLock, kwPrepare, kwExecute, kwDeallocate, kwHandler, kwXA:
		return Session
	case kwCall:
		st.produces = true
		return Session
	case kwInsert, kwReplace, kwUpdate, kwDelete, kwLoad:
		st.produces = true
	case kwGet: // GET [CURRENT | STACKED] DIAGNOSTICS
		return ReadsResult
	}
	return 0
}

// other handles any token but a word or a leading "(".
func (st *stmt) other() {
	if st.kind == kwNone {
		st.kind = kwOther
		return
	}
	st.n++
	switch st.kind {
	case kwBegin, kwCommit, kwRollback:
		st.bad = true
	}
}

// endWord advances the COMMIT / ROLLBACK grammar by one word.
func (st *stmt) endWord(k kw) {
	s := st.end
	switch {
	case k == kwWork && s == endStart:
		st.end = endWork
	case k == kwAnd && s <= endWork:
		st.end = endAnd
	case k == kwNo && s == endAnd:
		st.end = endAndNo
	case k == kwChain && (s == endAnd || s == endAndNo):
		st.chain = s == endAnd
		st.end = endChain
	case k == kwNo && (s <= endWork || s == endChain):
		st.end = endNo
	case k == kwRelease && (s <= endWork || s == endChain || s == endNo):
		st.release = s != endNo
		st.end = endRelease
	default:
		st.bad = true // ROLLBACK TO SAVEPOINT, or not valid SQL
	}
}

// finish returns the statement's remaining effects and, if it controls the transaction,
// stores its transaction effect in *tx.
func (st *stmt) finish(tx *Effect) Effect {
	switch st.kind {
	case kwBegin:
		if !st.bad {
			*tx = BeginsTx
		}
	case kwStart, kwXA:
		if st.tx != 0 {
			*tx = st.tx
		}
	case kwCommit, kwRollback:
		switch {
		case st.bad || st.end == endAnd || st.end == endAndNo || st.end == endNo:
			// not a complete COMMIT / ROLLBACK
		case st.chain && st.release:
			// MySQL rejects AND CHAIN RELEASE: the transaction stays as it was.
		case st.chain:
			*tx = BeginsTx
		default:
			*tx = EndsTx
		}
	case kwExplain, kwShow:
		return 0
	}
	if st.produces {
		return ProducesResult
	}
	return 0
}

// kw identifies the words Classify looks for.
type kw uint8

const (
	kwNone kw = iota
	kwOther

	// Statement keywords: kwBegin..kwValues.
	kwBegin
	kwStart
	kwCommit
	kwRollback
	kwXA
	kwSet
	kwUse
	kwCreate
	kwLock
	kwPrepare
	kwExecute
	kwDeallocate
	kwDrop
	kwHandler
	kwInsert
	kwReplace
	kwUpdate
	kwDelete
	kwLoad
	kwCall
	kwGet
	kwFlush
	kwShow
	kwExplain // also DESCRIBE and DESC
	kwWith
	kwSelect
	kwTable
	kwValues

	// Other keywords.
	kwWork
	kwAnd
	kwNo
	kwChain
	kwRelease
	kwTransaction
	kwTemporary
	kwWarnings
	kwErrors
	kwExport
	kwCalcFoundRows

	// Function and system variable names.
	kwFoundRows
	kwRowCount
	kwLastInsertID
	kwGetLock
	kwIdentity
	kwNextval
	kwSetval
	kwLastval
	kwCurrval
	kwNext
	kwPrevious
	kwValue
)

type kwName struct {
	name string // lower case
	k    kw
}

// keywords lists the words by length.
var keywords = [...][]kwName{
	2: {{"xa", kwXA}, {"no", kwNo}},
	3: {{"set", kwSet}, {"use", kwUse}, {"get", kwGet}, {"and", kwAnd}},
	4: {{"lock", kwLock}, {"drop", kwDrop}, {"load", kwLoad}, {"call", kwCall}, {"show", kwShow},
		{"desc", kwExplain}, {"with", kwWith}, {"work", kwWork}, {"next", kwNext}},
	5: {{"begin", kwBegin}, {"start", kwStart}, {"flush", kwFlush}, {"table", kwTable},
		{"chain", kwChain}, {"value", kwValue}},
	6: {{"select", kwSelect}, {"insert", kwInsert}, {"update", kwUpdate}, {"delete", kwDelete},
		{"commit", kwCommit}, {"create", kwCreate}, {"values", kwValues}, {"errors", kwErrors},
		{"export", kwExport}, {"setval", kwSetval}},
	7: {{"replace", kwReplace}, {"prepare", kwPrepare}, {"execute", kwExecute},
		{"handler", kwHandler}, {"explain", kwExplain}, {"release", kwRelease},
		{"nextval", kwNextval}, {"lastval", kwLastval}, {"currval", kwCurrval}},
	8: {{"rollback", kwRollback}, {"describe", kwExplain}, {"warnings", kwWarnings},
		{"get_lock", kwGetLock}, {"identity", kwIdentity}, {"previous", kwPrevious}},
	9:  {{"temporary", kwTemporary}, {"row_count", kwRowCount}},
	10: {{"deallocate", kwDeallocate}, {"found_rows", kwFoundRows}},
	11: {{"transaction", kwTransaction}},
	14: {{"last_insert_id", kwLastInsertID}},
	19: {{"sql_calc_found_rows", kwCalcFoundRows}},
}

// firstLetters[n] has bit c-'a' set if a keyword of length n starts with letter c. It lets
// lookup turn down most identifiers after one test.
var firstLetters = func() (m [len(keywords)]uint32) {
	for n, names := range keywords {
		for _, e := range names {
			m[n] |= 1 << (e.name[0] - 'a')
		}
	}
	return m
}()

// lookup returns the keyword w spells in any letter case, or kwNone.
func lookup(w string) kw {
	if len(w) == 0 || len(w) >= len(keywords) {
		return kwNone
	}
	if c := w[0] | 0x20; c < 'a' || c > 'z' || firstLetters[len(w)]&(1<<(c-'a')) == 0 {
		return kwNone
	}
	for _, e := range keywords[len(w)] {
		if equalLower(w, e.name) {
			return e.k
		}
	}
	return kwNone
}

// equalLower reports whether w equals lower, a lower-case ASCII word of the same length,
// ignoring the case of ASCII letters in w.
func equalLower(w, lower string) bool {
	for i := 0; i < len(lower); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
