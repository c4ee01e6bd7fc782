package sqlclass

import "strings"

// tok is the kind of a token produced by scanner.next.
type tok uint8

const (
	tokEOF     tok = iota
	tokWord        // unquoted identifier, keyword or number; text in scanner.word
	tokQuoted      // `quoted identifier`
	tokString      // 'string' or "string"
	tokUserVar     // @name, @'name', @"name", @`name`
	tokSysVar      // @@name, @@session.name; last name part in scanner.word
	tokLParen      // (
	tokRParen      // )
	tokSemi        // ;
	tokDot         // .
	tokOther       // any other single byte
)

// Byte classes.
const (
	clOther uint8 = iota
	clSpace       // separates tokens
	clIdent       // may appear in an unquoted identifier, keyword or number
	clPunct       // a token by itself that Classify does not look at: , ? = + < ...
)

var class = func() (t [256]uint8) {
	for _, c := range []byte(" \t\n\r\f\v") {
		t[c] = clSpace
	}
	for c := 0; c < 256; c++ {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '$', c >= 0x80: // bytes of UTF-8 sequences belong to identifiers
			t[c] = clIdent
		case c > ' ' && c < 0x7f && !strings.ContainsRune("'\"`@();.#-/*", rune(c)):
			t[c] = clPunct
		}
	}
	return t
}()

// scanner splits SQL text into tokens the way the MySQL lexer does, as far as Classify needs:
// it skips whitespace, comments, and the contents of strings and quoted identifiers, and it
// returns the contents of executable comments (/*! ... */) as ordinary tokens.
type scanner struct {
	s        string
	i        int    // next byte to read
	exec     bool   // inside /*! ... */: the next "*/" closes it
	quoteEnd int    // index just past the last closing quote, -1 if none
	word     string // text of the last tokWord, or name of the last tokSysVar
	start    int    // index of the first byte of the last tokString or tokQuoted
	// unterminated: a quote was never closed. Under NO_BACKSLASH_ESCAPES the server ends the
	// literal earlier than this scanner does ('C:\'), so what follows is unknown.
	unterminated bool
	// openComment: a comment (/* ..., /*! ...) was never closed, or it is an optimizer hint
	// (/*+ ... */) holding a quote, whose end MySQL finds by reading the quotes.
	openComment bool
	// backslash: a backslash escaped the quote that opened its string ('it\'s'). A server in
	// NO_BACKSLASH_ESCAPES mode ends the string at that quote, so the text reads otherwise.
	backslash bool
	// noEscapes: read strings as a server in NO_BACKSLASH_ESCAPES mode does, where a backslash
	// is an ordinary byte.
	noEscapes bool
}

func newScanner(s string) scanner { return scanner{s: s, quoteEnd: -1} }

// next returns the next token.
func (sc *scanner) next() tok {
	s, i := sc.s, sc.i
	for i < len(s) {
		c := s[i]
		switch class[c] {
		case clSpace:
			i++
			continue
		case clIdent:
			j := i + 1
			for j < len(s) && class[s[j]] == clIdent {
				j++
			}
			sc.word = s[i:j]
			sc.i = j
			return tokWord
		case clPunct:
			sc.i = i + 1
			return tokOther
		}
		sc.i = i
		switch {
		case c == '#':
			sc.skipLine()
		case c == '-' && sc.at(1) == '-' && (i+2 == len(s) || s[i+2] <= ' '):
			// "-- " comment; MySQL accepts any control character after the dashes.
			sc.skipLine()
		case c == '/' && sc.at(1) == '*':
			sc.comment()
		case c == '*' && sc.exec && sc.at(1) == '/':
			sc.exec = false
			sc.i += 2
		default:
			return sc.punct(c)
		}
		i = sc.i
	}
	sc.i = i
	if sc.exec {
		sc.openComment = true
	}
	return tokEOF
}

// at returns the byte k positions ahead, or 0 past the end.
func (sc *scanner) at(k int) byte {
	if sc.i+k < len(sc.s) {
		return sc.s[sc.i+k]
	}
	return 0
}

func (sc *scanner) skipLine() {
	if n := strings.IndexByte(sc.s[sc.i:], '\n'); n >= 0 {
		sc.i += n + 1
	} else {
		sc.i = len(sc.s)
	}
}

// comment handles a "/*" at sc.i. An executable comment, "/*!" or MariaDB's "/*M!" with
// optional version digits, only opens: its contents are scanned as SQL and its "*/" closed by
// next. Every other comment, including optimizer hints "/*+ ... */", is skipped whole; an
// unterminated one runs to the end of the text.
func (sc *scanner) comment() {
	j := sc.i + 2
	switch {
	case sc.at(2) == '!':
		j++
	case sc.at(2) == 'M' && sc.at(3) == '!':
		j += 2
	default:
		if n := strings.Index(sc.s[j:], "*/"); n >= 0 {
			hint := sc.at(2) == '+'
			sc.i = j + n + 2
			if hint && strings.ContainsAny(sc.s[j:j+n], "'\"`") {
				// An optimizer hint holding a quote: MySQL's hint scanner reads quoted
				// names and strings, so a "*/" inside them does not end the hint there.
				// Where that hint ends is unknown here, as if it were never closed.
				sc.openComment = true
			}
		} else {
			sc.i = len(sc.s)
			sc.openComment = true
		}
		return
	}
	for j < len(sc.s) && '0' <= sc.s[j] && sc.s[j] <= '9' {
		j++
	}
	sc.i = j
	sc.exec = true
}

// punct returns the token that starts with c, which is not whitespace, an identifier byte or
// the start of a comment.
func (sc *scanner) punct(c byte) tok {
	start := sc.i
	sc.i++
	switch c {
	case '(':
		return tokLParen
	case ')':
		return tokRParen
	case ';':
		return tokSemi
	case '.':
		return tokDot
	case '\'', '"':
		sc.start = start
		sc.i = sc.skipQuoted(sc.i, c)
		sc.quoteEnd = sc.i
		return tokString
	case '`':
		sc.start = start
		sc.i = sc.skipQuoted(sc.i, c)
		sc.quoteEnd = sc.i
		return tokQuoted
	case '@':
		if start == sc.quoteEnd {
			// 'user'@'host' or `user`@host: an account name, not a variable.
			return tokOther
		}
		if sc.at(0) == '@' {
			sc.i++
			sc.word = sc.name()
			if k := strings.LastIndexByte(sc.word, '.'); k >= 0 {
				sc.word = sc.word[k+1:] // @@session.x -> x
			}
			return tokSysVar
		}
		switch q := sc.at(0); q {
		case '\'', '"', '`':
			sc.i = sc.skipQuoted(sc.i+1, q)
		default:
			sc.name()
		}
		return tokUserVar
	}
	return tokOther
}

// name skips and returns an unquoted variable name: identifier bytes and dots.
func (sc *scanner) name() string {
	j := sc.i
	for j < len(sc.s) && (class[sc.s[j]] == clIdent || sc.s[j] == '.') {
		j++
	}
	n := sc.s[sc.i:j]
	sc.i = j
	return n
}

// skipQuoted returns the index just past the quote q that closes the literal whose contents
// start at s[i], or len(s) if it is unterminated. A doubled quote stands for itself; in
// strings (not in `identifiers`) a backslash escapes the next byte, unless sc.noEscapes.
func (sc *scanner) skipQuoted(i int, q byte) int {
	s := sc.s
	for i < len(s) {
		switch s[i] {
		case '\\':
			if q != '`' && !sc.noEscapes {
				if i+1 < len(s) && s[i+1] == q {
					sc.backslash = true
				}
				i += 2
				continue
			}
		case q:
			if i+1 < len(s) && s[i+1] == q {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	sc.unterminated = true
	return len(s)
}
