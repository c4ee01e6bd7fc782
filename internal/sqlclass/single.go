package sqlclass

// SingleStatement reports whether query holds exactly one statement: after the first ";" only
// further ";" and comments may follow. A text with an unterminated quote or comment is false,
// as is an empty one. It never panics and does not allocate.
func SingleStatement(query string) bool {
	sc := newScanner(query)
	seen := false
	for {
		switch sc.next() {
		case tokEOF:
			return seen && !sc.unterminated
		case tokSemi:
			if !seen {
				continue
			}
			for {
				switch sc.next() {
				case tokEOF:
					return !sc.unterminated
				case tokSemi:
				default:
					return false
				}
			}
		default:
			seen = true
		}
	}
}

// ReplicaSession is a stand-in until the allow-list lands.
func ReplicaSession(query string) bool { return ReplicaRead(query) }
