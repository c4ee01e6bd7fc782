// Package history checks the record of a concurrent workload, and the state the database holds
// after it, for the anomalies a client-side balancer must never cause: an acknowledged write
// lost, a write applied twice, a write whose outcome the client could not know run again, a read
// that misses a write its read-your-writes scope made before it, and a scope's reads going back
// in time. It is for lbd's own cluster tests, not for users.
//
// The checks are decidable only for a workload shaped for them, as Jepsen's register and
// append workloads are: every write carries an operation id of its own, so the final state
// tells how many times each write was applied; every key has one writer, which writes
// increasing values to it, so a read's value names the write it saw; and a read returns the
// highest value of its key. A workload that cannot tell whether a write of a key was applied
// (Unknown) should leave that key alone afterwards, since from then on no read of it can be
// judged against what the scope knows.
package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is what an operation did.
type Kind int

const (
	// Write writes Value to Key (a row of its own, carrying the operation's ID).
	Write Kind = iota + 1
	// Read reads Key's highest value into Value (0 when the key has none).
	Read
)

// String returns "write" or "read".
func (k Kind) String() string {
	switch k {
	case Write:
		return "write"
	case Read:
		return "read"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Outcome is what the client learnt of an operation.
type Outcome int

const (
	// OK: acknowledged. A write was applied, a read answered.
	OK Outcome = iota
	// Failed: the operation surely did not take effect (the server refused it, or lbd refused it
	// before sending it).
	Failed
	// Unknown: the client cannot tell; a write may or may not have been applied (the
	// connection failed after the statement was sent).
	Unknown
)

// String returns "ok", "failed" or "unknown".
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Op is one operation of the workload, as the worker that ran it saw it.
type Op struct {
	ID      int64     // unique in the history; a write stores it with its row
	Worker  int       // the worker that ran it; a worker runs one operation at a time
	Scope   string    // the read-your-writes scope it ran in
	Node    string    // the node it ran on, when the workload knows it; "" otherwise
	Kind    Kind      // Write or Read
	Key     int64     // the key written or read
	Value   int64     // the value written, or the value read (0: the key had none)
	Start   time.Time // just before the call
	End     time.Time // just after it returned
	Outcome Outcome   // OK, Failed or Unknown
	Err     error     // the error returned; nil when OK
}

// Recorder collects operations from many goroutines.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
}

// Add records op. It is safe for concurrent use.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Len returns how many operations have been recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// Ops returns a copy of the operations recorded so far, in the order they were added.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// Final is what the database and the proxies showed once the workload had stopped.
type Final struct {
	// Applied counts, by operation ID, the rows each write left in the final state, read from
	// the primary directly. A write missing from it was applied 0 times.
	Applied map[int64]int
	// Sends counts, by operation ID, how many times a proxy in the path received each write's
	// statement; nil when no proxy recorded them.
	Sends map[int64]int
}

// AnomalyKind names what a check found.
type AnomalyKind int

const (
	// Lost: a write was acknowledged but is not in the final state.
	Lost AnomalyKind = iota + 1
	// AppliedTwice: an acknowledged write is in the final state more than once.
	AppliedTwice
	// Rerun: a write whose outcome was unknown was run again: applied more than once, or sent
	// more than once.
	Rerun
	// FailedApplied: a write the client was told surely failed is in the final state.
	FailedApplied
	// StaleRead: a read returned less than a write of its scope to its key acknowledged before
	// the read began.
	StaleRead
	// NonMonotonicRead: a read returned less than a read of the same scope and key that ended
	// before it began.
	NonMonotonicRead
	// PhantomRead: a read returned a value no write that may have been applied wrote.
	PhantomRead
)

// String names the anomaly in words.
func (k AnomalyKind) String() string {
	switch k {
	case Lost:
		return "lost write"
	case AppliedTwice:
		return "write applied twice"
	case Rerun:
		return "unknown-outcome write run again"
	case FailedApplied:
		return "failed write applied"
	case StaleRead:
		return "stale read"
	case NonMonotonicRead:
		return "non-monotonic read"
	case PhantomRead:
		return "read of a value never written"
	}
	return fmt.Sprintf("AnomalyKind(%d)", int(k))
}

// Anomaly is one violation and the few operations that show it, in the order they began.
type Anomaly struct {
	Kind   AnomalyKind
	Detail string // what the operations show, in words
	Ops    []Op
}

// Format writes the anomaly and its operations, their times relative to origin.
func (a Anomaly) Format(origin time.Time) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: %s", a.Kind, a.Detail)
	for _, op := range a.Ops {
		sb.WriteString("\n    ")
		sb.WriteString(formatOp(op, origin))
	}
	return sb.String()
}

// formatOp writes one operation on one line.
func formatOp(op Op, origin time.Time) string {
	node := op.Node
	if node == "" {
		node = "?"
	}
	s := fmt.Sprintf("op %d worker %d scope %s %-5s key %d value %d %-7s node %s  %+.6fs .. %+.6fs",
		op.ID, op.Worker, op.Scope, op.Kind, op.Key, op.Value, op.Outcome, node,
		op.Start.Sub(origin).Seconds(), op.End.Sub(origin).Seconds())
	if op.Err != nil {
		s += "  err: " + op.Err.Error()
	}
	return s
}

// Report is what Check found.
type Report struct {
	Ops       int       // operations checked
	Writes    int       // of which writes
	Reads     int       // of which reads that returned a value
	Unknown   int       // writes whose outcome was unknown
	Failed    int       // writes that surely failed
	Origin    time.Time // the first operation's start; times in String count from it
	Anomalies []Anomaly // in the order of the checks, then of the operations
}

// Count returns how many anomalies of kind k the report holds.
func (r Report) Count(k AnomalyKind) int {
	n := 0
	for _, a := range r.Anomalies {
		if a.Kind == k {
			n++
		}
	}
	return n
}

// Counts returns the number of anomalies by kind, for a log line.
func (r Report) Counts() map[AnomalyKind]int {
	out := map[AnomalyKind]int{}
	for _, a := range r.Anomalies {
		out[a.Kind]++
	}
	return out
}

// String sums the report up and prints, for each kind found, the minimal histories of its
// first few anomalies.
func (r Report) String() string {
	const perKind = 3
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d operations (%d writes: %d failed, %d with an unknown outcome; %d reads answered): %d anomalies",
		r.Ops, r.Writes, r.Failed, r.Unknown, r.Reads, len(r.Anomalies))
	shown := map[AnomalyKind]int{}
	for _, a := range r.Anomalies {
		if shown[a.Kind]++; shown[a.Kind] > perKind {
			continue
		}
		sb.WriteString("\n  ")
		sb.WriteString(a.Format(r.Origin))
	}
	for k := Lost; k <= PhantomRead; k++ {
		if n := shown[k]; n > perKind {
			fmt.Fprintf(&sb, "\n  (%d more of kind %s)", n-perKind, k)
		}
	}
	return sb.String()
}

// Check checks ops against final and returns every anomaly it finds. Operations with an ID
// that is not unique make the history undecidable; Check reports that as an error.
func Check(ops []Op, final Final) (Report, error) {
	r := Report{Ops: len(ops)}
	byID := make(map[int64]bool, len(ops))
	for _, op := range ops {
		if byID[op.ID] {
			return r, fmt.Errorf("history: operation id %d appears twice; every operation needs an id of its own", op.ID)
		}
		byID[op.ID] = true
		if op.Kind != Write && op.Kind != Read {
			return r, fmt.Errorf("history: operation %d has kind %v; want Write or Read", op.ID, op.Kind)
		}
		if r.Origin.IsZero() || op.Start.Before(r.Origin) {
			r.Origin = op.Start
		}
	}
	r.Anomalies = append(r.Anomalies, checkWrites(&r, ops, final)...)
	r.Anomalies = append(r.Anomalies, checkReads(&r, ops)...)
	return r, nil
}

// checkWrites compares every write with the final state and the proxies' record.
func checkWrites(r *Report, ops []Op, final Final) []Anomaly {
	var out []Anomaly
	for _, op := range ops {
		if op.Kind != Write {
			continue
		}
		r.Writes++
		applied := final.Applied[op.ID]
		sends, recorded := final.Sends[op.ID]
		one := []Op{op}
		switch op.Outcome {
		case OK:
			switch {
			case applied == 0:
				out = append(out, Anomaly{Lost, "acknowledged, but not in the final state", one})
			case applied > 1:
				out = append(out, Anomaly{AppliedTwice, fmt.Sprintf("acknowledged once, in the final state %d times", applied), one})
			}
		case Unknown:
			r.Unknown++
			if applied > 1 {
				out = append(out, Anomaly{Rerun, fmt.Sprintf("outcome unknown to the client, in the final state %d times", applied), one})
			}
		case Failed:
			r.Failed++
			if applied > 0 {
				out = append(out, Anomaly{FailedApplied, fmt.Sprintf("reported as failed, in the final state %d times", applied), one})
			}
		}
		if final.Sends != nil && recorded && sends > 1 && op.Outcome != Failed && applied <= 1 {
			out = append(out, Anomaly{Rerun, fmt.Sprintf("one call, its statement received %d times by the proxies", sends), one})
		}
	}
	return out
}

// scopeKey is one scope's view of one key.
type scopeKey struct {
	scope string
	key   int64
}

// checkReads checks each answered read against the writes of its scope and key acknowledged
// before it began, against the scope's earlier reads of the key, and against every value
// written to the key.
func checkReads(r *Report, ops []Op) []Anomaly {
	written := map[int64]map[int64]bool{} // key -> values of writes that may have been applied
	writes := map[scopeKey][]Op{}         // acknowledged writes
	reads := map[scopeKey][]Op{}          // answered reads
	for _, op := range ops {
		sk := scopeKey{op.Scope, op.Key}
		switch {
		case op.Kind == Write && op.Outcome != Failed:
			if written[op.Key] == nil {
				written[op.Key] = map[int64]bool{}
			}
			written[op.Key][op.Value] = true
			if op.Outcome == OK {
				writes[sk] = append(writes[sk], op)
			}
		case op.Kind == Read && op.Outcome == OK:
			r.Reads++
			reads[sk] = append(reads[sk], op)
		}
	}
	var out []Anomaly
	for _, sk := range sortedKeys(reads) {
		rs := reads[sk]
		byEnd := func(a, b Op) int { return a.End.Compare(b.End) }
		ws := slices.SortedFunc(slices.Values(writes[sk]), byEnd)
		done := slices.SortedFunc(slices.Values(rs), byEnd)
		slices.SortFunc(rs, func(a, b Op) int { return a.Start.Compare(b.Start) })
		var (
			wi, di         int
			lastW, highest Op // the highest acknowledged write and the highest read that ended so far
			haveW, haveR   bool
		)
		for _, rd := range rs {
			for ; wi < len(ws) && ws[wi].End.Before(rd.Start); wi++ {
				if !haveW || ws[wi].Value > lastW.Value {
					lastW, haveW = ws[wi], true
				}
			}
			for ; di < len(done) && done[di].End.Before(rd.Start); di++ {
				if !haveR || done[di].Value > highest.Value {
					highest, haveR = done[di], true
				}
			}
			if rd.Value != 0 && !written[sk.key][rd.Value] {
				out = append(out, Anomaly{PhantomRead, fmt.Sprintf("read %d of key %d, which no write that may have been applied wrote", rd.Value, sk.key), []Op{rd}})
			}
			if haveW && rd.Value < lastW.Value {
				out = append(out, Anomaly{StaleRead, fmt.Sprintf("read %d of key %d after its scope's write of %d was acknowledged", rd.Value, sk.key, lastW.Value), []Op{lastW, rd}})
			}
			if haveR && rd.Value < highest.Value {
				out = append(out, Anomaly{NonMonotonicRead, fmt.Sprintf("read %d of key %d after its scope had read %d", rd.Value, sk.key, highest.Value), []Op{highest, rd}})
			}
		}
	}
	return out
}

// sortedKeys returns m's keys by scope, then key, so that reports are stable.
func sortedKeys(m map[scopeKey][]Op) []scopeKey {
	out := make([]scopeKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b scopeKey) int {
		return cmp.Or(strings.Compare(a.scope, b.scope), cmp.Compare(a.key, b.key))
	})
	return out
}
