package gormplugin

import "strings"

// readVerbs are the statement verbs RetryReads treats as reads. WITH is left out because MySQL
// accepts it in front of UPDATE and DELETE, EXPLAIN because EXPLAIN ANALYZE runs its statement,
// and CALL because a procedure may write.
var readVerbs = []string{"SELECT", "SHOW", "DESC", "DESCRIBE"}

// isRead reports whether the SQL text starts (after blanks, parentheses and comments) with a
// read verb. An executable comment (/*! ... */, /*M! ... */) may hold anything, so a statement
// that starts with one is not a read.
func isRead(q string) bool {
	for {
		q = strings.TrimLeft(q, " \t\r\n\f(")
		switch {
		case strings.HasPrefix(q, "/*!"), strings.HasPrefix(q, "/*M!"):
			return false
		case strings.HasPrefix(q, "/*"):
			end := strings.Index(q[2:], "*/")
			if end < 0 {
				return false
			}
			q = q[2+end+2:]
		case strings.HasPrefix(q, "#"), strings.HasPrefix(q, "-- "), strings.HasPrefix(q, "--\t"),
			strings.HasPrefix(q, "--\n"), strings.HasPrefix(q, "--\r"):
			end := strings.IndexByte(q, '\n')
			if end < 0 {
				return false
			}
			q = q[end+1:]
		default:
			n := 0
			for n < len(q) && isWordByte(q[n]) {
				n++
			}
			for _, v := range readVerbs {
				if strings.EqualFold(q[:n], v) {
					return true
				}
			}
			return false
		}
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b == '$' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}
