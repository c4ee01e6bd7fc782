package sqlclass

import "testing"

func TestOneCommand(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{"INSERT INTO t VALUES (1)", true},
		{"  /* c */ (SELECT 1)", true},
		{"update t set a = 1", true},
		{"BEGIN", true},
		{"BEGIN WORK;", true},
		{"INSERT INTO t VALUES (1); CALL p()", true}, // the first statement decides; later ones show in the answer
		{"CALL p()", false},
		{"call p", false},
		{"EXECUTE s", false},
		{"EXECUTE IMMEDIATE 'CALL p()'", false},
		{"BEGIN NOT ATOMIC INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); END", false},
		{"lbl: BEGIN NOT ATOMIC SELECT 1; END", false},
		{"IF 1 THEN INSERT INTO t VALUES (1); END IF", false},
		{"WHILE 0 DO SELECT 1; END WHILE", false},
		{"/*!CALL p() */", false},
		{"", false},
		{"'x'", false},
	} {
		if got := OneCommand(tc.query); got != tc.want {
			t.Errorf("OneCommand(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { OneCommand("INSERT INTO t VALUES (1)") }); n != 0 {
		t.Errorf("OneCommand allocates %v times", n)
	}
}
