package history

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// builder hands out operations one after another on a clock of its own, 1 ms apart.
type builder struct {
	t0  time.Time
	now time.Duration
	id  int64
	ops []Op
}

// op appends an operation that starts at the builder's clock and takes 1 ms; overlap makes
// the next one start before it ended.
func (b *builder) op(worker int, scope string, kind Kind, key, value int64, outcome Outcome) Op {
	if b.t0.IsZero() {
		b.t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	b.id++
	op := Op{ID: b.id, Worker: worker, Scope: scope, Kind: kind, Key: key, Value: value,
		Start: b.t0.Add(b.now), End: b.t0.Add(b.now + time.Millisecond), Outcome: outcome}
	if outcome != OK {
		op.Err = errors.New("invalid connection")
	}
	b.now += 2 * time.Millisecond
	b.ops = append(b.ops, op)
	return op
}

// correct is a history with two workers, each writing its own key and reading it back, with
// one write of unknown outcome (key 2 left alone afterwards) and one failed write; final
// applies every acknowledged write once and the unknown one once.
func correct() (*builder, Final) {
	b := &builder{}
	b.op(1, "w1", Write, 1, 1, OK)
	b.op(1, "w1", Read, 1, 1, OK)
	b.op(2, "w2", Write, 2, 1, OK)
	b.op(2, "w2", Write, 2, 2, Unknown) // may or may not be there: key 2 is left alone
	b.op(1, "w1", Write, 1, 2, Failed)  // surely not there
	b.op(1, "w1", Read, 1, 1, OK)
	b.op(1, "w1", Write, 1, 3, OK)
	b.op(1, "w1", Read, 1, 3, OK)
	b.op(1, "w1", Read, 1, 3, OK)
	b.op(2, "w2", Read, 3, 0, OK) // a key nobody wrote reads as none
	final := Final{Applied: map[int64]int{1: 1, 3: 1, 4: 1, 7: 1}, Sends: map[int64]int{1: 1, 3: 1, 4: 1, 5: 1, 7: 1}}
	return b, final
}

func check(t *testing.T, ops []Op, final Final) Report {
	t.Helper()
	r, err := Check(ops, final)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCorrectHistoryPasses(t *testing.T) {
	b, final := correct()
	r := check(t, b.ops, final)
	if len(r.Anomalies) != 0 {
		t.Fatalf("a correct history: %s", r)
	}
	if r.Ops != 10 || r.Writes != 5 || r.Failed != 1 || r.Unknown != 1 || r.Reads != 5 {
		t.Errorf("counted %d ops, %d writes (%d failed, %d unknown), %d reads; want 10, 5 (1, 1), 5", r.Ops, r.Writes, r.Failed, r.Unknown, r.Reads)
	}
	// The unknown write absent is as good as present.
	delete(final.Applied, 4)
	if r := check(t, b.ops, final); len(r.Anomalies) != 0 {
		t.Fatalf("a correct history without its unknown write: %s", r)
	}
}

// only checks that r holds exactly one anomaly, of kind k, showing the operations ids.
func only(t *testing.T, r Report, k AnomalyKind, ids ...int64) {
	t.Helper()
	if len(r.Anomalies) != 1 || r.Anomalies[0].Kind != k {
		t.Fatalf("want exactly one %s, got %s", k, r)
	}
	a := r.Anomalies[0]
	if len(a.Ops) != len(ids) {
		t.Fatalf("the %s shows %d operations, want %v: %s", k, len(a.Ops), ids, r)
	}
	for i, id := range ids {
		if a.Ops[i].ID != id {
			t.Fatalf("the %s shows operations %v, want %v: %s", k, opIDs(a.Ops), ids, r)
		}
	}
	s := r.String()
	if !strings.Contains(s, k.String()) || strings.Count(s, "\n    op ") != len(ids) {
		t.Errorf("the report does not print the %s with its %d operations:\n%s", k, len(ids), s)
	}
	t.Logf("%s", s)
}

func opIDs(ops []Op) []int64 {
	out := make([]int64, len(ops))
	for i, op := range ops {
		out[i] = op.ID
	}
	return out
}

func TestLostWrite(t *testing.T) {
	b, final := correct()
	delete(final.Applied, 7) // worker 1's acknowledged write of 3
	only(t, check(t, b.ops, final), Lost, 7)
}

func TestWriteAppliedTwice(t *testing.T) {
	b, final := correct()
	final.Applied[3] = 2
	only(t, check(t, b.ops, final), AppliedTwice, 3)
}

func TestUnknownOutcomeWriteRunAgain(t *testing.T) {
	b, final := correct()
	final.Applied[4] = 2 // applied on two attempts
	only(t, check(t, b.ops, final), Rerun, 4)

	b, final = correct()
	final.Sends[4] = 2 // sent twice, applied once: the first send's outcome was not known
	only(t, check(t, b.ops, final), Rerun, 4)
}

func TestFailedWriteApplied(t *testing.T) {
	b, final := correct()
	final.Applied[5] = 1
	only(t, check(t, b.ops, final), FailedApplied, 5)
}

func TestStaleReadAfterAWriteInScope(t *testing.T) {
	b, final := correct()
	b.op(1, "w1", Write, 1, 4, OK) // id 11
	final.Applied[11] = 1
	b.op(1, "w1", Read, 1, 3, OK) // id 12: the write of 4 was acknowledged before it began
	only(t, check(t, b.ops, final), StaleRead, 11, 12)

	// Another scope's read of the key is not held to that write.
	b, final = correct()
	b.op(3, "w3", Read, 1, 1, OK)
	if r := check(t, b.ops, final); len(r.Anomalies) != 0 {
		t.Fatalf("a read in another scope: %s", r)
	}

	// A read that began before the write was acknowledged may miss it.
	b, final = correct()
	w := b.op(1, "w1", Write, 1, 4, OK)
	final.Applied[w.ID] = 1
	rd := b.op(1, "w1", Read, 1, 3, OK)
	b.ops[len(b.ops)-1].Start = w.End.Add(-time.Microsecond)
	if r := check(t, b.ops, final); len(r.Anomalies) != 0 {
		t.Fatalf("a read %d concurrent with the write %d: %s", rd.ID, w.ID, r)
	}
}

func TestNonMonotonicRead(t *testing.T) {
	// Worker 4 reads worker 1's key in a scope of its own, so no write holds its reads; the
	// second read going back from 3 to 1 is the anomaly.
	b, final := correct()
	b.op(4, "w4", Read, 1, 3, OK) // id 11
	b.op(4, "w4", Read, 1, 1, OK) // id 12
	only(t, check(t, b.ops, final), NonMonotonicRead, 11, 12)

	// Overlapping reads are not ordered.
	b, final = correct()
	b.op(4, "w4", Read, 1, 3, OK)
	b.op(4, "w4", Read, 1, 1, OK)
	b.ops[len(b.ops)-1].Start = b.ops[len(b.ops)-2].End.Add(-time.Microsecond)
	if r := check(t, b.ops, final); len(r.Anomalies) != 0 {
		t.Fatalf("two overlapping reads: %s", r)
	}
}

func TestPhantomRead(t *testing.T) {
	b, final := correct()
	b.op(1, "w1", Read, 1, 9, OK) // nobody wrote 9
	only(t, check(t, b.ops, final), PhantomRead, 11)

	b, final = correct()
	b.op(1, "w1", Read, 2, 2, OK) // the unknown-outcome write of 2 to key 2 may have been applied
	if r := check(t, b.ops, final); r.Count(PhantomRead) != 0 {
		t.Fatalf("a read of an unknown-outcome write's value: %s", r)
	}
	b, final = correct()
	b.op(1, "w1", Read, 1, 2, OK) // 2 was written to key 1 only by the failed write
	if r := check(t, b.ops, final); r.Count(PhantomRead) != 1 {
		t.Fatalf("a read of a failed write's value: %s", r)
	}
}

func TestDuplicateIDsAreRefused(t *testing.T) {
	b, final := correct()
	b.ops = append(b.ops, b.ops[0])
	if _, err := Check(b.ops, final); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("Check of a history with an id twice: %v", err)
	}
}

func TestRecorder(t *testing.T) {
	var r Recorder
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 100 {
				r.Add(Op{ID: int64(w*100 + i), Kind: Read})
			}
		}()
	}
	for range 4 {
		<-done
	}
	if r.Len() != 400 || len(r.Ops()) != 400 {
		t.Fatalf("recorded %d (%d), want 400", r.Len(), len(r.Ops()))
	}
}

// The report prints the operations of the first three anomalies of each kind and counts the
// rest.
func TestReportCutsEachKindShort(t *testing.T) {
	b, final := correct()
	for v := int64(4); v < 9; v++ {
		w := b.op(1, "w1", Write, 1, v, OK)
		final.Applied[w.ID] = 1
		b.op(1, "w1", Read, 1, 3, OK) // misses every write after 3
	}
	r := check(t, b.ops, final)
	if n := r.Count(StaleRead); n != 5 {
		t.Fatalf("%d stale reads, want 5: %s", n, r)
	}
	s := r.String()
	if got := strings.Count(s, "\n  stale read: "); got != 3 || !strings.Contains(s, "(2 more of kind stale read)") {
		t.Fatalf("the report shows %d stale reads in full, want 3 and the other 2 counted:\n%s", got, s)
	}
}
