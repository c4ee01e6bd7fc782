package sqlclass

// OneCommand reports whether the first statement of query runs as one statement, so that a
// server error opening its answer proves that none of it ran. It decides by proof: the first
// keyword, after blanks, comments and opening parentheses, must be one of the statements
// below, which run no other statement; BEGIN counts only as BEGIN [WORK] alone. Everything
// else is false: CALL and EXECUTE (a procedure, or a prepared CALL, runs a body whose
// earlier statements may have run before the one refused), compound statements (BEGIN NOT
// ATOMIC ... END, a labelled block, IF, CASE, LOOP, REPEAT, WHILE, FOR), an executable
// comment before the first keyword, and anything the scanner cannot read. It never panics
// and does not allocate.
func OneCommand(query string) bool {
	sc := newScanner(query)
	t := sc.next()
	for t == tokLParen {
		t = sc.next()
	}
	if t != tokWord || sc.exec {
		return false
	}
	w := sc.word
	if lookup(w) == kwBegin {
		t = sc.next()
		if t == tokWord && lookup(sc.word) == kwWork {
			t = sc.next()
		}
		return t == tokEOF || t == tokSemi
	}
	return oneCommandVerb(w)
}

// oneCommandVerbs are the first keywords of statements that run no other statement.
var oneCommandVerbs = [...]string{
	"select", "insert", "update", "delete", "replace", "with", "table", "values", "set",
	"use", "start", "commit", "rollback", "savepoint", "release", "load", "create", "alter",
	"drop", "rename", "truncate", "lock", "unlock", "show", "desc", "describe", "explain",
	"do", "flush", "grant", "revoke", "analyze", "optimize", "check", "checksum", "repair",
	"xa", "prepare", "deallocate", "handler", "kill", "purge", "reset", "install",
	"uninstall", "change", "stop", "help", "get", "signal", "resignal", "binlog", "cache",
}

func oneCommandVerb(w string) bool {
	for _, v := range oneCommandVerbs {
		if len(w) == len(v) && equalLower(w, v) {
			return true
		}
	}
	return false
}
