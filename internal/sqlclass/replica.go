package sqlclass

// ReplicaRead reports whether query may run on a replica in place of the primary and give the
// answer the primary would give. It decides by proof: it is true only when all of these hold,
// and false for anything it cannot read.
//
//   - query is a single plain SELECT: a [RetryableRead] whose first keyword is SELECT (not
//     SHOW or DESCRIBE, whose answers differ from server to server), with no locking clause
//     (FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE: only the primary can give the lock), no
//     INTO, no user variable or other effect [Classify] finds (NEXT VALUE FOR, FOUND_ROWS(),
//     ...), and no executable comment (/*! ... */ or /*M! ... */, which a replica of another
//     version may read otherwise) anywhere;
//   - every function it calls is on the allow-list ([ReplicaSafeFunction]): a word followed by
//     "(" is either such a function, with "(" right after its name, or a keyword that may
//     stand before "(" (IN, EXISTS, FROM, JOIN, OVER, INDEX, ...), or a type or name right
//     after AS (CAST(x AS DECIMAL(10,2)), FROM (SELECT ...) AS d (a, b)). A qualified call
//     (db.f()), a quoted name before "(", and every unknown name (user-defined and stored
//     functions, built-ins not on the list) make it false;
//   - it reads no system variable (@@x), since their values differ from server to server;
//   - it names nothing in a schema whose tables differ from server to server:
//     information_schema, performance_schema, mysql, sys and oceanbase, in any letter case,
//     quoted or not;
//   - its parentheses balance, every string, quoted identifier and comment is closed, and no
//     string holds a backslash before its own quote ('it\'s'), which a server in
//     NO_BACKSLASH_ESCAPES mode reads as the end of the string.
//
// A table the connection's default database holds unqualified cannot be seen: a DSN whose
// database is one of the schemas above must not use the split. ReplicaRead reads the text
// twice at most, never panics and does not allocate.
func ReplicaRead(query string) bool { return ReplicaReadClassified(query, Classify(query)) }

// ReplicaReadClassified is ReplicaRead for a caller that already holds eff, Classify(query):
// it reads the text once, where ReplicaRead classifies it again.
func ReplicaReadClassified(query string, eff Effect) bool {
	return eff == 0 && replicaText(query, false)
}

// ReplicaSession reports whether query may run on a replica physical connection that already
// holds the logical connection's session state (a read-only transaction, or user variables set
// there), and give the answer the primary would give with the same state. It is true for:
//
//   - a text [ReplicaRead] accepts;
//   - a single SELECT that ReplicaRead would accept but for user variables: it may read and
//     assign them (@v, @v := expr) and end in INTO @v[, @w ...] (never INTO OUTFILE, INTO
//     DUMPFILE or INTO a name);
//   - a single SET statement that assigns only user variables (SET @a = expr, @b := expr),
//     with expressions ReplicaRead would accept. A system variable (@@x, SET SESSION, GLOBAL,
//     PERSIST, NAMES, CHARACTER SET, TRANSACTION, autocommit, ...) makes it false.
//
// The rules on functions, system variables, schemas, executable comments and closed quotes
// are those of ReplicaRead. Everything else is false. It reads the text twice at most, never
// panics and does not allocate.
func ReplicaSession(query string) bool {
	return Classify(query)&^Session == 0 && replicaText(query, true)
}

// replicaText checks the rules of ReplicaRead on the text of query, in one pass; Classify
// checks the rest. With session, user variables, INTO @v and a SET of user variables are
// allowed.
func replicaText(query string, session bool) bool {
	sc := newScanner(query)
	t := sc.next()
	depth := 0
	for t == tokLParen {
		depth++
		t = sc.next()
	}
	if t != tokWord || sc.exec {
		return false
	}
	set := false
	switch lookup(sc.word) {
	case kwSelect:
	case kwSet:
		if !session || depth > 0 {
			return false
		}
		set = true
	default:
		return false
	}
	var (
		prev      = tokWord
		word      = sc.word // the previous token, if it is a word
		wordEnd   = sc.i    // index just past word
		qualified bool      // word came right after a "."
		afterAs   bool      // word came right after the word AS
		isAs      bool      // word is AS
		forWord   bool      // word is FOR
		lockWord  bool      // word is LOCK
		before    tok       // the token before word
		prevWord  string    // the word before word, if before is a word
		wantVar   = set     // the next token must be a user variable: after SET, "," in SET, INTO
		ended     bool      // a ";" ended the statement
	)
	for {
		t = sc.next()
		if sc.exec {
			return false // executable comment
		}
		if ended && t != tokSemi && t != tokEOF {
			return false // a second statement
		}
		if wantVar {
			if t != tokUserVar {
				return false
			}
			wantVar = false
		}
		switch t {
		case tokEOF:
			return depth == 0 && !sc.unterminated && !sc.openComment && !sc.backslash
		case tokSemi:
			ended = true
		case tokWord:
			w := sc.word
			switch {
			case forWord && (len(w) == len("update") && equalLower(w, "update") || len(w) == len("share") && equalLower(w, "share")),
				lockWord && len(w) == len("in") && equalLower(w, "in"):
				return false // a locking clause
			case len(w) == len("into") && equalLower(w, "into"):
				if !session {
					return false
				}
				wantVar = true
			}
			afterAs = prev == tokWord && isAs
			qualified = prev == tokDot
			isAs = len(w) == len("as") && equalLower(w, "as")
			forWord = len(w) == len("for") && equalLower(w, "for")
			lockWord = len(w) == len("lock") && equalLower(w, "lock")
			before, prevWord = prev, word
			word, wordEnd = w, sc.i
		case tokLParen:
			depth++
			switch prev {
			case tokWord:
				if qualified {
					return false // db.f(): a stored function, or not a call we know
				}
				if !afterAs {
					switch verdictOf(word) {
					case vKeyword, vReserved:
					case vUnknown:
						if !contextKeyword(word, before, prevWord) {
							return false
						}
					case vSafe:
						if wordEnd != sc.i-1 {
							return false // "f (": may be a stored function named f
						}
					default:
						return false
					}
				}
			case tokQuoted, tokString:
				return false // `f`(), or "f"() under ANSI_QUOTES: not a built-in
			case tokUserVar:
				return false // @v(: not SQL
			}
		case tokRParen:
			depth--
			if depth < 0 {
				return false
			}
		case tokDot:
			switch prev {
			case tokWord:
				if serverSchema(word) {
					return false
				}
			case tokQuoted, tokString: // `mysql`.user, "mysql".user under ANSI_QUOTES
				if sc.start+1 <= sc.quoteEnd-1 && serverSchema(sc.s[sc.start+1:sc.quoteEnd-1]) {
					return false
				}
			}
		case tokSysVar:
			return false
		case tokUserVar:
			if !session {
				return false
			}
		case tokOther:
			if sc.s[sc.i-1] == '@' {
				return false // 'user'@'host': an account name has no place here
			}
			if set && depth == 0 && sc.s[sc.i-1] == ',' {
				wantVar = true // SET @a = 1, @b = 2: every target a user variable
			}
		}
		if t != tokWord {
			forWord, lockWord, isAs = false, false, false
		}
		prev = t
	}
}
