package sqlclass

// ReplicaRead reports whether query may run on a read-only replica in place of the primary: a
// [RetryableRead] that is a SELECT (not SHOW or DESCRIBE, whose answers differ from server to
// server: SHOW MASTER STATUS, SHOW PROCESSLIST) and takes no lock (no FOR UPDATE, FOR SHARE or
// LOCK IN SHARE MODE, which only the primary can give). When in doubt it answers false, and the
// statement goes to the primary. It never panics and does not allocate.
func ReplicaRead(query string) bool {
	if !RetryableRead(query) {
		return false
	}
	sc := newScanner(query)
	t := sc.next()
	for t == tokLParen {
		t = sc.next()
	}
	if t != tokWord || lookup(sc.word) != kwSelect {
		return false
	}
	prev := ""
	for {
		switch sc.next() {
		case tokEOF:
			return true
		case tokWord:
			w := sc.word
			switch {
			case prev == "for" && (len(w) == len("update") && equalLower(w, "update") || len(w) == len("share") && equalLower(w, "share")):
				return false
			case prev == "lock" && len(w) == len("in") && equalLower(w, "in"):
				return false
			}
			switch {
			case len(w) == len("for") && equalLower(w, "for"):
				prev = "for"
			case len(w) == len("lock") && equalLower(w, "lock"):
				prev = "lock"
			default:
				prev = ""
			}
		default:
			prev = ""
		}
	}
}
