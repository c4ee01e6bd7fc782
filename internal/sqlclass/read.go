package sqlclass

// RetryableRead reports whether query is a single statement that only reads, so that after it
// failed on one physical connection it can run again on another and give the answer the first
// run would have given. It is true when all of these hold:
//
//   - the first keyword, after blanks, comments and opening parentheses, is SELECT, SHOW, DESC
//     or DESCRIBE, and it is not inside an executable comment (/*! ... */, /*M! ... */), whose
//     contents a server of another version skips;
//   - DESC and DESCRIBE are not followed by ANALYZE (DESC is a synonym of EXPLAIN, and EXPLAIN
//     ANALYZE runs its statement, a multi-table DELETE or UPDATE included). EXPLAIN itself and
//     WITH (which MySQL accepts before UPDATE and DELETE) are left out whole;
//   - there is no second statement: only ";" and comments may follow the first;
//   - the statement has no INTO (SELECT ... INTO @v, INTO OUTFILE, INTO DUMPFILE write);
//   - [Classify] finds no effect at all: no user variable, lock, transaction control or other
//     session state, nothing read from the previous statement (FOUND_ROWS(), LAST_INSERT_ID(),
//     SHOW WARNINGS, ...) and nothing left for the next (SQL_CALC_FOUND_ROWS, NEXTVAL(), ...),
//     and no unterminated quote.
//
// Like Classify it cannot see inside stored functions, which may write. It never panics and
// does not allocate.
func RetryableRead(query string) bool {
	if Classify(query) != 0 {
		return false
	}
	sc := newScanner(query)
	t := sc.next()
	for t == tokLParen {
		t = sc.next()
	}
	if t != tokWord || sc.exec {
		return false
	}
	desc := false
	switch lookup(sc.word) {
	case kwSelect, kwShow:
	case kwExplain: // EXPLAIN, DESCRIBE or DESC
		if len(sc.word) == len("explain") {
			return false
		}
		desc = true
	default:
		return false
	}
	for {
		switch sc.next() {
		case tokEOF:
			return true
		case tokSemi:
			for {
				switch sc.next() {
				case tokEOF:
					return true
				case tokSemi:
				default:
					return false
				}
			}
		case tokWord:
			w := sc.word
			if len(w) == len("into") && equalLower(w, "into") ||
				desc && len(w) == len("analyze") && equalLower(w, "analyze") {
				return false
			}
		}
	}
}
