package sqlclass

import "testing"

// What is a routing hint and what is not. Every text here that is not a hint reads as one to a
// careless search for "lbd:replica" or "lbd:primary".
var hintCases = []struct {
	name  string
	query string
	want  Hint
}{
	{"primary", "/* lbd:primary */ SELECT 1", HintPrimary},
	{"replica", "/* lbd:replica */ SELECT 1", HintReplica},
	{"leading white space", " \t\n/* lbd:replica */SELECT 1", HintReplica},
	{"no spaces inside", "/*lbd:replica*/ SELECT 1", HintReplica},
	{"spaces and newlines inside", "/*\n  lbd:primary \t*/ SELECT 1", HintPrimary},
	{"a write with a replica hint is still a hint (the router decides)", "/* lbd:replica */ DELETE FROM t", HintReplica},

	{"no hint", "SELECT 1", NoHint},
	{"empty", "", NoHint},
	{"a plain comment", "/* app:orders */ SELECT 1", NoHint},
	{"after the first token", "SELECT /* lbd:replica */ 1", NoHint},
	{"at the end", "SELECT 1 /* lbd:replica */", NoHint},
	{"inside a string", "SELECT '/* lbd:replica */'", NoHint},
	{"a string first", "'/* lbd:replica */' SELECT 1", NoHint},
	{"inside a quoted identifier", "`/* lbd:replica */`", NoHint},
	{"behind another comment", "/* trace */ /* lbd:replica */ SELECT 1", NoHint},
	{"behind a line comment", "-- x\n/* lbd:replica */ SELECT 1", NoHint},
	{"in a line comment", "-- /* lbd:replica */\nSELECT 1", NoHint},
	{"in a hash comment", "# lbd:replica\nSELECT 1", NoHint},
	{"misspelt", "/* lbd:replcia */ SELECT 1", NoHint},
	{"plural", "/* lbd:replicas */ SELECT 1", NoHint},
	{"space after the colon", "/* lbd: replica */ SELECT 1", NoHint},
	{"other letter case", "/* LBD:REPLICA */ SELECT 1", NoHint},
	{"other prefix", "/* lb:replica */ SELECT 1", NoHint},
	{"the word alone", "/* replica */ SELECT 1", NoHint},
	{"more than the word", "/* lbd:replica please */ SELECT 1", NoHint},
	{"two words", "/* lbd:replica lbd:primary */ SELECT 1", NoHint},
	{"nested comment: the first */ ends it", "/* lbd:replica /* x */ */ SELECT 1", NoHint},
	{"nested comment around it", "/* /* lbd:replica */ */ SELECT 1", NoHint},
	{"executable comment", "/*! lbd:replica */ SELECT 1", NoHint},
	{"executable comment with a version", "/*!50000 lbd:replica */ SELECT 1", NoHint},
	{"MariaDB executable comment", "/*M! lbd:replica */ SELECT 1", NoHint},
	{"optimizer hint", "/*+ lbd:replica */ SELECT 1", NoHint},
	{"optimizer hint after SELECT", "SELECT /*+ lbd:replica */ 1", NoHint},
	{"unterminated", "/* lbd:replica SELECT 1", NoHint},
	{"unterminated, the word only", "/* lbd:replica", NoHint},
	{"a long comment", "/* lbd:replica" + string(make([]byte, 200)) + " */ SELECT 1", NoHint},
	{"a slash alone", "/ lbd:replica */ SELECT 1", NoHint},
}

func TestRoutingHint(t *testing.T) {
	for _, tc := range hintCases {
		if got := RoutingHint(tc.query); got != tc.want {
			t.Errorf("%s: RoutingHint(%q) = %d, want %d", tc.name, tc.query, got, tc.want)
		}
	}
}

// A hint comment in front of a text changes nothing of what the text is: the replica-safety
// proof reads past it.
func TestHintedTextsClassifyAsWithout(t *testing.T) {
	for _, c := range replicaCases {
		for _, h := range []string{"/* lbd:replica */ ", "/* lbd:primary */ "} {
			if got := ReplicaRead(h + c.query); got != c.read {
				t.Errorf("ReplicaRead(%q) = %v, want %v as without the hint", h+c.query, got, c.read)
			}
		}
	}
}

// RoutingHint runs for every statement under routingHints=true: it should cost a few
// nanoseconds and allocate nothing (go test -bench RoutingHint -benchmem).
func BenchmarkRoutingHint(b *testing.B) {
	for _, q := range []string{"/* lbd:replica */ SELECT id FROM t WHERE id = 1", "SELECT id FROM t WHERE id = 1"} {
		b.Run(q[:8], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				RoutingHint(q)
			}
		})
	}
}
