package sqlclass

// SingleStatement reports whether query holds exactly one statement: some SQL, optionally
// followed by ";" and comments. Texts with no statement, with a second statement, or with a
// string, quoted identifier or comment that is never closed are false. The contents of
// executable comments (/*! ... */) count as SQL, so a ";" there makes a second statement
// whether or not the server runs the comment. When a string holds a backslash before its own
// quote ('C:\'), the text is read a second time as a server in NO_BACKSLASH_ESCAPES mode
// reads it, and must not hold a second statement then either.
//
// A compound statement (BEGIN NOT ATOMIC ... END, CREATE PROCEDURE ... BEGIN ...; ... END) is
// one statement to the server but false here. So a refusal of a text SingleStatement accepts
// means that none of it ran. It never panics, does not allocate, and reads the text twice at
// most.
func SingleStatement(query string) bool {
	sc := newScanner(query)
	if statements(&sc) != 1 || sc.unterminated || sc.openComment {
		return false
	}
	if !sc.backslash {
		return true
	}
	sc = newScanner(query)
	sc.noEscapes = true
	// Read this way, an unclosed quote or comment runs to the end of the text and so holds
	// no statement boundary; only a second statement before it matters.
	return statements(&sc) <= 1
}

// statements returns the number of non-empty statements sc reads, up to 2.
func statements(sc *scanner) int {
	n, in := 0, false
	for {
		switch sc.next() {
		case tokEOF:
			if in {
				n++
			}
			return n
		case tokSemi:
			if n == 0 && !in {
				// A ";" before any statement: an empty statement the server answers with
				// an error of its own, or digits an executable comment's version took
				// ("/*!0;0*/"). Either way not one plain statement.
				return 2
			}
			if in {
				n++
				in = false
				if n > 1 {
					return n
				}
			}
		default:
			if n > 0 {
				return 2
			}
			in = true
		}
	}
}
