package sqlclass

import "strings"

// Verb returns the first keyword of query in upper case ("SELECT", "INSERT", "WITH", "CALL",
// ...), as statement telemetry names the operation (OpenTelemetry's db.operation.name), when
// query holds exactly one statement (SingleStatement) whose first keyword, after blanks,
// comments and opening parentheses, is one of the statement keywords below. Otherwise it
// returns "": a text of several statements has no one operation name (the database semantic
// conventions say not to take one from it), and an unknown first word would let the text's
// contents into a metric's attributes. The result is one of a fixed set of strings, so a
// metric keyed by it stays low in cardinality. It never panics and does not allocate; it reads
// the text twice at most (SingleStatement's reading, then its first word).
func Verb(query string) string {
	if !SingleStatement(query) {
		return ""
	}
	sc := newScanner(query)
	t := sc.next()
	for t == tokLParen {
		t = sc.next()
	}
	if t != tokWord || sc.exec {
		return ""
	}
	w := sc.word
	for i, v := range verbs {
		if len(w) == len(v) && equalLower(w, v) {
			return upperVerbs[i]
		}
	}
	return ""
}

// verbs are the statement keywords Verb names: those of oneCommandVerbs, and the statements
// that may run others.
var verbs = append(oneCommandVerbs[:len(oneCommandVerbs):len(oneCommandVerbs)], "call", "execute", "begin")

// upperVerbs holds verbs in upper case, made once so that Verb does not allocate.
var upperVerbs = func() []string {
	out := make([]string, len(verbs))
	for i, v := range verbs {
		out[i] = strings.ToUpper(v)
	}
	return out
}()
