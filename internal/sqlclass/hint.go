package sqlclass

import "strings"

// Hint is a routing hint a statement's text carries (routingHints=true): where the application
// asks the read/write split to send that one statement.
type Hint uint8

const (
	// NoHint: the text carries none; the split decides.
	NoHint Hint = iota
	// HintPrimary: the text begins with /* lbd:primary */.
	HintPrimary
	// HintReplica: the text begins with /* lbd:replica */. It never makes a statement
	// ReplicaRead refuses go to a replica: the caller checks ReplicaRead first.
	HintReplica
)

// The hint comments' words. A hint is only ever these exact words.
const (
	hintPrimary = "lbd:primary"
	hintReplica = "lbd:replica"
	// maxHintComment bounds the text between "/*" and "*/" of a hint, white space included.
	maxHintComment = 64
)

// RoutingHint returns the hint query begins with: a comment "/*", optional white space, the
// word lbd:primary or lbd:replica in lower case, optional white space and "*/", before anything
// but white space. Every other text gives NoHint: a hint comment after the first token (SELECT
// /* lbd:replica */ ...), inside a string ('/* lbd:replica */'), behind another comment,
// misspelt or in other letter case, a comment holding more than the word (/* lbd:replica /* x
// */), an executable comment (/*! ... */, /*M! ... */) and an optimizer hint (/*+ ... */). It
// reads a few bytes past the white space and does not allocate.
func RoutingHint(query string) Hint {
	i := 0
	for i < len(query) && class[query[i]] == clSpace {
		i++
	}
	rest, ok := strings.CutPrefix(query[i:], "/*")
	if !ok {
		return NoHint
	}
	// The comment ends at its first "*/": MySQL comments do not nest. No hint is longer than its
	// word and some white space, so only that much of the text is searched.
	end := strings.Index(rest[:min(len(rest), maxHintComment)], "*/")
	if end < 0 {
		return NoHint
	}
	word := strings.Trim(rest[:end], " \t\n\r\f\v")
	if word == "" || class[rest[0]] != clSpace && rest[0] != 'l' { // "/*!", "/*+", "/*M!": not comments lbd reads
		return NoHint
	}
	switch word {
	case hintPrimary:
		return HintPrimary
	case hintReplica:
		return HintReplica
	}
	return NoHint
}
