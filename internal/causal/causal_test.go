package causal

import (
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		f    Flavor
		in   string
		want string
	}{
		{MariaDB, "0-1-8", "0-1-8"},
		{MariaDB, " 0-1-8,1-2-30 ", "0-1-8,1-2-30"},
		{MySQL, "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"},
		{MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:11,\n2174b383-5441-11e8-b90a-c80aa9429562:1", "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:11,2174b383-5441-11e8-b90a-c80aa9429562:1"},
	} {
		p, err := tc.f.Parse(tc.in)
		if err != nil || p.String() != tc.want || p.IsZero() {
			t.Errorf("%v.Parse(%q) = %q, %v; want %q", tc.f, tc.in, p, err, tc.want)
		}
	}
	if _, err := MariaDB.Parse(""); err != ErrNoPosition {
		t.Errorf("empty answer: %v, want ErrNoPosition", err)
	}
	for _, tc := range []struct {
		f  Flavor
		in string
	}{
		{MariaDB, "0-1"}, {MariaDB, "0-1-x"}, {MariaDB, "0-1-8;DROP"}, {MariaDB, "-1-2"},
		{MySQL, "0-1-8"}, {MySQL, "3E11FA47-71CA-11E1-9E33-C80AA9429562:a"}, {MySQL, "zz:1"},
		{MariaDB, strings.Repeat("0-1-8,", 1000)},
	} {
		if p, err := tc.f.Parse(tc.in); err == nil || !p.IsZero() || len(err.Error()) > 200 {
			t.Errorf("%v.Parse(%.30q) = %q, %v; want a short error", tc.f, tc.in, p, err)
		}
	}
}

func TestMerge(t *testing.T) {
	pos := func(f Flavor, s string) Position { return mustParse(t, f, s) }
	for _, tc := range []struct {
		p, q Position
		want string
	}{
		{Position{}, pos(MariaDB, "0-1-8"), "0-1-8"},
		{pos(MariaDB, "0-1-8"), Position{}, "0-1-8"},
		{pos(MariaDB, "0-1-8"), pos(MariaDB, "0-1-9"), "0-1-9"},
		{pos(MariaDB, "0-1-9"), pos(MariaDB, "0-2-4"), "0-1-9"}, // a lower sequence in the same domain adds nothing
		{pos(MariaDB, "0-1-9,1-1-2"), pos(MariaDB, "1-3-5,2-1-1"), "0-1-9,1-3-5,2-1-1"},
		{pos(MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"), pos(MySQL, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7"), "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-7"},
	} {
		if got := Merge(tc.p, tc.q).String(); got != tc.want {
			t.Errorf("Merge(%q, %q) = %q, want %q", tc.p, tc.q, got, tc.want)
		}
	}
}

func TestReached(t *testing.T) {
	for _, tc := range []struct {
		f       Flavor
		answer  string
		reached bool
		bad     bool
	}{
		{MariaDB, "0", true, false}, {MariaDB, "-1", false, false}, {MariaDB, "", false, true}, {MariaDB, "1", false, true},
		{MySQL, "0", true, false}, {MySQL, "1", false, false}, {MySQL, "-1", false, true},
		{Galera, "1", true, false}, {Galera, "0", false, true}, {Galera, "-1", false, true}, {Galera, "", false, true},
	} {
		got, err := tc.f.Reached(tc.answer)
		if got != tc.reached || (err != nil) != tc.bad {
			t.Errorf("%v.Reached(%q) = %v, %v; want %v (error %v)", tc.f, tc.answer, got, err, tc.reached, tc.bad)
		}
	}
	for _, s := range []string{"mariadb", "MySQL", "Galera"} {
		if f, err := ParseFlavor(s); err != nil || !strings.EqualFold(f.String(), s) {
			t.Errorf("ParseFlavor(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseFlavor("postgres"); err == nil {
		t.Error("ParseFlavor accepted postgres")
	}
	if !strings.Contains(MariaDB.CaptureQuery(), "@@last_gtid") || !strings.Contains(MySQL.WaitQuery(), "WAIT_FOR_EXECUTED_GTID_SET") {
		t.Error("queries misnamed")
	}
	if !strings.Contains(Galera.CaptureQuery(), "WSREP_LAST_WRITTEN_GTID()") || !strings.Contains(Galera.WaitQuery(), "WSREP_SYNC_WAIT_UPTO_GTID") {
		t.Error("Galera's queries misnamed")
	}
	// Only Galera's wait answer needs settling, by a causal read that Reached reads as reached.
	if MariaDB.SettleQuery() != "" || MySQL.SettleQuery() != "" {
		t.Error("a replication flavor settles its waits")
	}
	if q := Galera.SettleQuery(); !strings.Contains(q, "wsrep_sync_wait = 1") || !strings.HasPrefix(q, "SET STATEMENT ") {
		t.Errorf("Galera's settle query %q: want a causal read for the one statement", q)
	}
	if ok, err := Galera.Reached("1"); !ok || err != nil {
		t.Errorf("Galera.Reached(1) = %v, %v", ok, err)
	}
}

func TestWaitText(t *testing.T) {
	p, _ := MariaDB.Parse("0-1-8,1-2-3")
	if got := p.WaitText(0.25); got != "SELECT MASTER_GTID_WAIT('0-1-8,1-2-3', 0.250)" {
		t.Errorf("MariaDB wait text %q", got)
	}
	m, _ := MySQL.Parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")
	if got := m.WaitText(2); got != "SELECT WAIT_FOR_EXECUTED_GTID_SET('3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5', 2.000)" || m.Flavor() != MySQL {
		t.Errorf("MySQL wait text %q", got)
	}
	// Galera's function takes whole seconds: a fraction is rounded down, under a second to 0
	// (no wait: the read runs on the node only if it has the position already).
	g, err := Galera.Parse("0-1-20")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seconds float64
		want    string
	}{
		{0.3, "SELECT WSREP_SYNC_WAIT_UPTO_GTID('0-1-20', 0)"},
		{2.9, "SELECT WSREP_SYNC_WAIT_UPTO_GTID('0-1-20', 2)"},
	} {
		if got := g.WaitText(tc.seconds); got != tc.want || g.Flavor() != Galera {
			t.Errorf("Galera wait text for %v s: %q, want %q", tc.seconds, got, tc.want)
		}
	}
	// Galera positions merge as MariaDB's do, by domain, and stay Galera's.
	h, _ := Galera.Parse("0-2-25")
	if m := Merge(g, h); m.String() != "0-2-25" || m.Flavor() != Galera {
		t.Errorf("Merge of Galera positions = %q (%v)", m.String(), m.Flavor())
	}
	if _, err := Galera.Parse("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"); err == nil {
		t.Error("Galera parsed a MySQL GTID set")
	}
}

// Positions merged from a primary that reports a new domain with every write stay bounded:
// past MaxDomains the merge is Overflowed (reads go to the primary), never a longer wait text.
func TestMergeIsBounded(t *testing.T) {
	var acc Position
	for i := range 5000 {
		p, err := MariaDB.Parse(fmt.Sprintf("%d-1-%d", i, i+1))
		if err != nil {
			t.Fatal(err)
		}
		acc = Merge(acc, p)
		if len(acc.String()) > maxPosition {
			t.Fatalf("after %d writes the position is %d bytes", i+1, len(acc.String()))
		}
		if got, want := acc.Overflowed(), i+1 > MaxDomains; got != want {
			t.Fatalf("after %d domains Overflowed = %v, want %v", i+1, got, want)
		}
	}
	if acc.IsZero() || acc.String() != "" {
		t.Fatalf("an overflowed position must be non-empty and carry no text: %q", acc.String())
	}
	// Long but few domains: the byte bound holds too.
	long, _ := MariaDB.Parse("1-1-18446744073709551615")
	acc = Position{}
	for d := range MaxDomains {
		p, _ := MariaDB.Parse(fmt.Sprintf("%d-4294967295-18446744073709551615", 1000000000+d))
		acc = Merge(acc, p)
	}
	acc = Merge(acc, long)
	if !acc.Overflowed() && len(acc.String()) > maxPosition {
		t.Fatalf("%d bytes and not overflowed", len(acc.String()))
	}
}

// Check accepts what Parse accepts and refuses the rest, without allocating: it runs on every
// GTID a server reports through session tracking.
func TestCheck(t *testing.T) {
	const u1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	for _, tc := range []struct {
		f  Flavor
		in string
		ok bool
	}{
		{MariaDB, "0-1-8", true}, {MariaDB, "0-1-8,1-2-30", true}, {Galera, "0-1-18446744073709551615", true},
		{MariaDB, "0-1-18446744073709551616", false}, // beyond 64 bits
		{MariaDB, "0-1", false}, {MariaDB, "0-1-8-9", false}, {MariaDB, "-1-2-3", false}, {MariaDB, "0--1-2", false},
		{MariaDB, "0-1-8,", false}, {MariaDB, ",0-1-8", false}, {MariaDB, "0-1-8'; DROP TABLE t; --", false},
		{MariaDB, "0-1-x", false}, {MariaDB, "0-1-8\x00", false}, {MariaDB, "+0-1-8", false},
		{MySQL, u1 + ":1-5", true}, {MySQL, u1 + ":1-5:11,\n" + strings.ToUpper(u1) + ":1", true}, {MySQL, u1 + ":7", true},
		{MySQL, u1 + ":1-", false}, {MySQL, u1 + ":", false}, {MySQL, u1, false}, {MySQL, u1 + ":1-2-3", false},
		{MySQL, u1[:35] + ":1", false}, {MySQL, u1 + "0:1", false}, {MySQL, "zz:1", false}, {MySQL, "0-1-8", false},
		{MySQL, u1 + ":1'", false}, {MySQL, u1 + ":-1", false}, {MySQL, u1 + ":99999999999999999999", false},
	} {
		err := tc.f.Check([]byte(tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%v.Check(%q) = %v, want ok %v", tc.f, tc.in, err, tc.ok)
		}
		if _, perr := tc.f.Parse(tc.in); (perr == nil) != tc.ok {
			t.Errorf("%v.Parse(%q) = %v, want ok %v", tc.f, tc.in, perr, tc.ok)
		}
	}
	b := []byte(u1 + ":1-5:11")
	if n := testing.AllocsPerRun(100, func() { MySQL.Check(b) }); n != 0 {
		t.Errorf("Check allocates %v times", n)
	}
}

// MySQL positions merge as sets: two writes' own GTIDs (session tracking) both stay.
func TestMergeMySQLSets(t *testing.T) {
	const u1, u2 = "3e11fa47-71ca-11e1-9e33-c80aa9429562", "2174b383-5441-11e8-b90a-c80aa9429562"
	pos := func(s string) Position { return mustParse(t, MySQL, s) }
	for _, tc := range []struct{ p, q, want string }{
		{u1 + ":5", u1 + ":6", u1 + ":5-6"},
		{u1 + ":6", u1 + ":5", u1 + ":5-6"},
		{u1 + ":5", u1 + ":9", u1 + ":5:9"},
		{u1 + ":1-5", u1 + ":1-7", u1 + ":1-7"},
		{u1 + ":1-3:7-9", u1 + ":4-6", u1 + ":1-9"},
		{u1 + ":5", strings.ToUpper(u2) + ":1", u1 + ":5," + u2 + ":1"},
		{strings.ToUpper(u1) + ":5", u1 + ":4", u1 + ":4-5"},
	} {
		got := Merge(pos(tc.p), pos(tc.q))
		if got.String() != tc.want || got.Flavor() != MySQL {
			t.Errorf("Merge(%q, %q) = %q, want %q", tc.p, tc.q, got, tc.want)
		}
		if _, err := MySQL.Parse(got.String()); err != nil {
			t.Errorf("the merge %q does not parse: %v", got, err)
		}
	}
}

// The positions every write and read of a one-domain MariaDB primary meet merge and compare
// without allocating.
func TestOneDomainAllocatesNothing(t *testing.T) {
	a, _ := MariaDB.Parse("0-1-100")
	b, _ := MariaDB.Parse("0-1-101")
	if n := testing.AllocsPerRun(100, func() { Merge(a, b); Covers(a, b); Covers(b, a) }); n != 0 {
		t.Errorf("Merge and Covers of one-domain positions allocate %v times", n)
	}
	if Merge(a, b) != b || Merge(b, a) != b || !Covers(b, a) || Covers(a, b) {
		t.Error("one-domain positions merged or compared wrong")
	}
}

func TestCovers(t *testing.T) {
	const u1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	pos := func(f Flavor, s string) Position { return mustParse(t, f, s) }
	for _, tc := range []struct {
		have, want Position
		covers     bool
	}{
		{pos(MariaDB, "0-1-9"), pos(MariaDB, "0-1-8"), true},
		{pos(MariaDB, "0-1-9"), pos(MariaDB, "0-1-9"), true},
		{pos(MariaDB, "0-1-9"), pos(MariaDB, "0-1-10"), false},
		{pos(MariaDB, "0-1-9"), pos(MariaDB, "1-1-1"), false},
		{pos(MariaDB, "0-1-9,1-1-4"), pos(MariaDB, "1-1-3"), true},
		{pos(MariaDB, "0-1-9"), Position{}, true},
		{Position{}, pos(MariaDB, "0-1-1"), false},
		{pos(MySQL, u1+":1-9"), pos(MySQL, u1+":4"), true},
		{pos(MySQL, u1+":1-3:5-9"), pos(MySQL, u1+":4"), false},
		{pos(MySQL, u1+":1-9"), pos(MariaDB, "0-1-1"), false},
		{Overflow(MariaDB), pos(MariaDB, "0-1-1"), false},
		{pos(MariaDB, "0-1-9"), Overflow(MariaDB), false},
		{pos(MariaDB, "1-1-4,0-2-12"), pos(MariaDB, "0-1-11"), true},
		{pos(MariaDB, "1-1-4,0-2-12"), pos(MariaDB, "0-1-13"), false},
		{pos(MariaDB, "1-1-4,0-2-12"), pos(MariaDB, "0-1-11,1-1-5"), false},
	} {
		if got := Covers(tc.have, tc.want); got != tc.covers {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.have, tc.want, got, tc.covers)
		}
	}
}

// mustParse is f.Parse(s), which must succeed.
func mustParse(t *testing.T, f Flavor, s string) Position {
	t.Helper()
	p, err := f.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
