package sqlclass

import "testing"

func TestVerb(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{"SELECT 1", "SELECT"},
		{"select name from items where id = ?", "SELECT"},
		{"  /* c */ (SELECT 1)", "SELECT"},
		{"-- note\nInsert INTO t VALUES (1);", "INSERT"},
		{"update t set a = 1", "UPDATE"},
		{"WITH x AS (SELECT 1) SELECT * FROM x", "WITH"},
		{"CALL p()", "CALL"},
		{"BEGIN", "BEGIN"},
		{"start transaction", "START"},
		{"SET @a = 1", "SET"},
		{"SELECT 1; SELECT 2", ""}, // several statements: no one operation
		{"SELECT 'a;b'", "SELECT"},
		{"/*!SELECT 1 */", ""}, // an executable comment: what runs depends on the server's version
		{"frobnicate t", ""},   // not a statement keyword: the text stays out of the name
		{"'x'", ""},
		{"", ""},
		{"SELECT 'unterminated", ""},
	} {
		if got := Verb(tc.query); got != tc.want {
			t.Errorf("Verb(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Verb("select v from t where id = ?") }); n != 0 {
		t.Errorf("Verb allocates %v times", n)
	}
}
