// Package causal holds what read-your-writes by GTID needs from the server: the query that reads
// the position a write reached on the primary, the query that waits on a replica until it has
// applied that position, and the merging of positions a scope collects. It does no I/O; the
// caller runs the queries.
//
// MariaDB: @@last_gtid is the GTID of the last transaction the session committed, and
// MASTER_GTID_WAIT(pos, timeout) returns 0 once the replica applied pos, -1 on timeout
// (MariaDB Knowledge Base, "GTID" and "MASTER_GTID_WAIT"). MySQL: @@global.gtid_executed is
// every transaction the server has committed, a superset of the session's own, and
// WAIT_FOR_EXECUTED_GTID_SET(set, timeout) returns 0 once the replica executed set, 1 on
// timeout (MySQL Reference Manual, "Functions Used with GTIDs"). MariaDB Galera Cluster:
// WSREP_LAST_WRITTEN_GTID() is the GTID of the session's last write, and
// WSREP_SYNC_WAIT_UPTO_GTID(gtid, timeout) returns 1 once the node has it, or fails with error
// 1205 (lock wait timeout) after timeout whole seconds (MariaDB Knowledge Base, "Galera Cluster
// Functions"), though not always once the node committed it (see SettleQuery); Galera nodes
// apply writes through the cluster, so the replication functions above never see them.
package causal

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Flavor is the server family whose GTIDs a position speaks.
type Flavor uint8

const (
	// MariaDB GTIDs: domain-server-sequence, a list of them separated by commas.
	MariaDB Flavor = iota
	// MySQL GTID sets: source_uuid:interval[:interval...], separated by commas.
	MySQL
	// Galera: MariaDB GTIDs, written and waited for through Galera's functions.
	Galera
)

// String returns "mariadb", "mysql" or "galera".
func (f Flavor) String() string {
	switch f {
	case MySQL:
		return "mysql"
	case Galera:
		return "galera"
	}
	return "mariadb"
}

// ParseFlavor reads "mariadb", "mysql" or "galera", in any case.
func ParseFlavor(s string) (Flavor, error) {
	switch strings.ToLower(s) {
	case "mariadb":
		return MariaDB, nil
	case "mysql":
		return MySQL, nil
	case "galera":
		return Galera, nil
	}
	return MariaDB, fmt.Errorf("GTID flavor %q: want mariadb, mysql or galera", s)
}

// CaptureQuery returns the query that reads, on the connection that just wrote, the position
// a replica must reach to see the write.
func (f Flavor) CaptureQuery() string {
	switch f {
	case MySQL:
		return "SELECT @@global.gtid_executed"
	case Galera:
		return "SELECT WSREP_LAST_WRITTEN_GTID()"
	}
	return "SELECT @@last_gtid"
}

// WaitQuery returns the query that waits on a replica until it has applied the position given
// as the first argument, for at most the seconds given as the second (a float; whole seconds
// for Galera), and Reached reads its answer.
func (f Flavor) WaitQuery() string {
	switch f {
	case MySQL:
		return "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"
	case Galera:
		return "SELECT WSREP_SYNC_WAIT_UPTO_GTID(?, ?)"
	}
	return "SELECT MASTER_GTID_WAIT(?, ?)"
}

// SettleQuery returns the query to run on a node after WaitQuery answered that the node reached
// a position, for the reads after it to see the position's writes; "" when that answer is proof
// enough (MariaDB, MySQL). Reached reads its answer too.
//
// Galera: WSREP_SYNC_WAIT_UPTO_GTID answers at once for a GTID no later than the last one the
// node assigned to a write it applies, and waits for the node to commit the GTID only past that
// (MariaDB's Wsrep_gtid_server::wait_gtid_upto, since the native GTIDs of 10.4): it may answer
// while the node is still committing the write, and a read right after it then misses the
// write. MariaDB 10.11.19 did so about once in 10,000 waits on a host with two CPU-bound
// processes. A causal read (wsrep_sync_wait=1, for this one statement) waits until the node has
// committed every write the cluster ordered before it, the waited position's among them: Galera
// releases a write's place in that order only once the write is over. MariaDB flags the
// session's state as changed after it, though SET STATEMENT leaves nothing in the session.
func (f Flavor) SettleQuery() string {
	if f == Galera {
		return "SET STATEMENT wsrep_sync_wait = 1 FOR SELECT 1"
	}
	return ""
}

// Reached reads WaitQuery's answer: true when the replica applied the position, false when the
// wait timed out. Anything else (NULL: a malformed position or no replication) is an error.
// Galera answers 1 once the node has the position (see SettleQuery), as its causal read does; it
// reports a timeout as an error (1205), not as an answer.
func (f Flavor) Reached(answer string) (bool, error) {
	ok, timedOut := "0", "-1"
	switch f {
	case MySQL:
		timedOut = "1"
	case Galera:
		ok, timedOut = "1", "<none>"
	}
	switch strings.TrimSpace(answer) {
	case ok:
		return true, nil
	case timedOut:
		return false, nil
	}
	return false, fmt.Errorf("GTID wait answered %q: want %s or %s", clip(answer), ok, timedOut)
}

// maxPosition bounds a position read from a server: far more than any real GTID list, and small
// enough that a scope never holds much.
const maxPosition = 4096

// ErrNoPosition is returned by Parse for an empty answer: the session has committed nothing
// that replicates (binary logging off, or nothing written yet).
var ErrNoPosition = errors.New("causal: the server reported no GTID position")

// ErrTooLong is wrapped by Parse's error for an answer longer than 4096 bytes. Such a position,
// well formed or not, cannot be waited for: Overflow stands for it, and its reads go to the
// primary.
var ErrTooLong = errors.New("causal: GTID position too long to wait for")

// Overflow returns the overflowed position of flavor f: one too large to wait for (see
// Overflowed), as a capture longer than a wait may carry (ErrTooLong) is.
func Overflow(f Flavor) Position { return Position{flavor: f, overflow: true} }

// Position is a validated GTID position of one flavor. The zero Position is empty: nothing to
// wait for.
type Position struct {
	flavor Flavor
	text   string
	// overflow: merging made the position larger than a wait may carry (MaxDomains domains, or
	// maxPosition bytes): no replica can be asked to reach it, so its reads go to the primary.
	overflow bool
}

// MaxDomains bounds the MariaDB replication domains a merged position holds. Real topologies
// use a handful (one per independent primary in multi-source replication); a primary that
// reports more makes the merged position Overflowed rather than a wait text that grows with
// every write.
const MaxDomains = 64

// Parse validates a position as the server wrote it (CaptureQuery's answer). A server is a peer:
// anything that is not a well-formed GTID list of the flavor, or longer than 4096 bytes, is an
// error quoting a short piece of it.
func (f Flavor) Parse(s string) (Position, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Position{}, ErrNoPosition
	}
	if len(s) > maxPosition {
		return Position{}, fmt.Errorf("%w: %d bytes, want at most %d", ErrTooLong, len(s), maxPosition)
	}
	if err := check(f, s); err != nil {
		return Position{}, fmt.Errorf("causal: GTID position %q: %w", clip(s), err)
	}
	if strings.ContainsAny(s, " \n") {
		// MySQL writes long sets over several lines.
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", ""), " ", "")
	}
	return Position{flavor: f, text: s}, nil
}

// Check reports whether b is a well-formed GTID list of the flavor, as Parse accepts it (of any
// length), without allocating: session tracking (internal/physical) checks every GTID a server
// reports with it as the answer arrives.
func (f Flavor) Check(b []byte) error { return check(f, b) }

// check validates s, a GTID list of flavor f: MariaDB's and Galera's domain-server-sequence,
// MySQL's source_uuid:interval[:interval...] (an interval is n or n-m), separated by commas,
// every number decimal and within 64 bits. Spaces and newlines count for nothing (MySQL writes
// long sets over several lines).
func check[T ~string | ~[]byte](f Flavor, s T) error {
	g := gtidScan{mysql: f == MySQL}
	for i := 0; i <= len(s); i++ {
		c := byte(',') // the end closes the last GTID
		if i < len(s) {
			c = s[i]
		}
		if c == ' ' || c == '\n' {
			continue
		}
		if err := g.step(c); err != nil {
			return err
		}
	}
	return nil
}

// gtidScan follows a GTID list character by character (check).
type gtidScan struct {
	mysql bool
	n     number
	field int  // MariaDB: of the current GTID, 0 domain, 1 server, 2 sequence
	uuid  int  // MySQL: characters of the source UUID seen so far; -1 once it ended
	end   bool // MySQL: the number being read ends an interval (after its dash)
}

func (g *gtidScan) step(c byte) error {
	if !g.mysql {
		switch {
		case c >= '0' && c <= '9' && g.n.add(c):
		case c == '-' && g.field < 2 && g.n.end():
			g.field++
		case c == ',' && g.field == 2 && g.n.end():
			g.field = 0
		default:
			return errors.New("want domain-server-sequence in decimal")
		}
		return nil
	}
	switch {
	case g.uuid >= 0 && c == ':':
		if g.uuid != 36 {
			return errors.New("want source_uuid:interval")
		}
		g.uuid = -1
	case g.uuid >= 0 && (c == '-' || isHex(c)):
		g.uuid++
	case g.uuid >= 0:
		return errors.New("want source_uuid:interval")
	case c >= '0' && c <= '9' && g.n.add(c):
	case c == '-' && !g.end && g.n.end():
		g.end = true
	case (c == ':' || c == ',') && g.n.end():
		g.end = false
		if c == ',' {
			g.uuid = 0
		}
	default:
		return errors.New("want decimal intervals")
	}
	return nil
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// number is a decimal number being read digit by digit.
type number struct {
	v    uint64
	some bool
}

// add appends digit c; false when the number no longer fits in 64 bits.
func (n *number) add(c byte) bool {
	d := uint64(c - '0')
	if n.v > (1<<64-1-d)/10 {
		return false
	}
	n.v, n.some = n.v*10+d, true
	return true
}

// end closes the number and reports whether it had a digit.
func (n *number) end() bool {
	ok := n.some
	*n = number{}
	return ok
}

// IsZero reports whether p is empty (nothing to wait for).
func (p Position) IsZero() bool { return p.text == "" && !p.overflow }

// Overflowed reports whether merging made p too large to wait for (see MaxDomains): a read that
// needs it must go to the primary.
func (p Position) Overflowed() bool { return p.overflow }

// String returns the position as the server writes it: WaitQuery's first argument.
func (p Position) String() string { return p.text }

// Merge returns a position a replica has reached only when it reached both p and q. MariaDB and
// Galera: per replication domain the higher sequence number (sequence numbers grow within a
// domain). MySQL: the union of the two GTID sets, per source UUID, its intervals joined (a
// position is a server's whole executed set when read with CaptureQuery, and one write's own
// GTID when the server reported it through session tracking). Positions of different flavors
// are not merged: the newer wins. A merge of more than MaxDomains domains (or source UUIDs), or
// longer than 4096 bytes, is Overflowed, and so is every later merge with it.
func Merge(p, q Position) Position {
	switch {
	case p.overflow || q.overflow:
		return Position{flavor: q.flavor, overflow: true}
	case p.IsZero():
		return q
	case q.IsZero():
		return p
	case p.flavor != q.flavor:
		return q
	case p.flavor == MySQL:
		return mergeMySQL(p, q)
	}
	if pd, ps, ok := single(p.text); ok {
		if qd, qs, ok := single(q.text); ok && pd == qd {
			// One domain each, the same (every write of a primary in one domain): the
			// higher sequence, with no allocation.
			if qs > ps {
				return q
			}
			return p
		}
	}
	type gtid struct{ server, seq uint64 }
	byDomain := map[uint64]gtid{}
	var order []uint64
	for _, s := range []string{p.text, q.text} {
		for _, part := range strings.Split(s, ",") {
			f := strings.Split(part, "-")
			d, _ := strconv.ParseUint(f[0], 10, 64)
			srv, _ := strconv.ParseUint(f[1], 10, 64)
			seq, _ := strconv.ParseUint(f[2], 10, 64)
			old, seen := byDomain[d]
			if !seen {
				if len(order) == MaxDomains {
					return Position{flavor: p.flavor, overflow: true}
				}
				order = append(order, d)
			}
			if !seen || seq > old.seq {
				byDomain[d] = gtid{srv, seq}
			}
		}
	}
	parts := make([]string, len(order))
	for i, d := range order {
		g := byDomain[d]
		parts[i] = fmt.Sprintf("%d-%d-%d", d, g.server, g.seq)
	}
	return bounded(p.flavor, strings.Join(parts, ","))
}

// bounded is the position text of flavor f, or the overflowed position when text is longer
// than a wait may carry.
func bounded(f Flavor, text string) Position {
	if len(text) > maxPosition {
		return Position{flavor: f, overflow: true}
	}
	return Position{flavor: f, text: text}
}

// mergeMySQL is Merge for two MySQL GTID sets (Parse validated both): their union, the source
// UUIDs in lower case in the order first seen, each one's intervals sorted and joined.
func mergeMySQL(p, q Position) Position {
	var order []string
	sets := map[string][]interval{}
	for _, s := range []string{p.text, q.text} {
		for _, part := range strings.Split(s, ",") {
			uuid, rest, _ := strings.Cut(part, ":")
			uuid = strings.ToLower(uuid)
			if _, seen := sets[uuid]; !seen {
				if len(order) == MaxDomains {
					return Position{flavor: MySQL, overflow: true}
				}
				order = append(order, uuid)
			}
			for _, iv := range strings.Split(rest, ":") {
				lo, hi, dash := strings.Cut(iv, "-")
				l, _ := strconv.ParseUint(lo, 10, 64)
				h := l
				if dash {
					h, _ = strconv.ParseUint(hi, 10, 64)
				}
				sets[uuid] = append(sets[uuid], interval{l, max(l, h)})
			}
		}
	}
	var b strings.Builder
	for i, uuid := range order {
		ivs := sets[uuid]
		sort.Sort(byLo(ivs))
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(uuid)
		write := func(iv interval) {
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(iv.lo, 10))
			if iv.hi != iv.lo {
				b.WriteByte('-')
				b.WriteString(strconv.FormatUint(iv.hi, 10))
			}
		}
		cur := ivs[0]
		for _, iv := range ivs[1:] {
			if cur.hi == math.MaxUint64 || iv.lo <= cur.hi+1 {
				cur.hi = max(cur.hi, iv.hi)
				continue
			}
			write(cur)
			cur = iv
		}
		write(cur)
		if b.Len() > maxPosition {
			break
		}
	}
	return bounded(MySQL, b.String())
}

// interval is one n or n-m of a MySQL GTID set: lo to hi, both included.
type interval struct{ lo, hi uint64 }

// byLo orders intervals by their first number. It sorts with package sort, whose code every
// program with database/sql links already, rather than with a generic sort of its own.
type byLo []interval

func (s byLo) Len() int           { return len(s) }
func (s byLo) Less(i, j int) bool { return s[i].lo < s[j].lo }
func (s byLo) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

// single reads text, a MariaDB position, as one GTID's domain and sequence; ok is false when
// it holds more than one (or is not one).
func single(text string) (domain, seq uint64, ok bool) {
	d, rest, ok1 := strings.Cut(text, "-")
	_, n, ok2 := strings.Cut(rest, "-")
	if !ok1 || !ok2 || strings.IndexByte(n, ',') >= 0 {
		return 0, 0, false
	}
	domain, err1 := strconv.ParseUint(d, 10, 64)
	seq, err2 := strconv.ParseUint(n, 10, 64)
	return domain, seq, err1 == nil && err2 == nil
}

// Covers reports whether a replica known to have reached have has reached want too: want is
// empty, or every GTID of want is in have. An overflowed position covers nothing and is covered
// by nothing; positions of different flavors do not cover each other. It allocates nothing
// when want is one MariaDB GTID (a read checks it on every read of a scope that wrote).
func Covers(have, want Position) bool {
	switch {
	case want.IsZero():
		return true
	case have.overflow || want.overflow || have.IsZero() || have.flavor != want.flavor:
		return false
	case have.text == want.text:
		return true
	}
	if want.flavor != MySQL {
		if wd, ws, ok := single(want.text); ok {
			for part := range strings.SplitSeq(have.text, ",") {
				if hd, hs, ok := single(part); ok && hd == wd {
					return hs >= ws
				}
			}
			return false
		}
	}
	// want adds nothing to have when merging them changes nothing of have (merged with itself,
	// which puts it in the form a merge writes).
	return Merge(have, want).text == Merge(have, have).text
}

func clip(s string) string {
	if len(s) > 48 {
		return s[:48] + "..."
	}
	return s
}

// WaitText returns WaitQuery with p and a timeout of seconds written into the text, for
// connections that run no prepared statements for it. p is validated (digits, dashes, colons,
// commas and hexadecimal only), so it cannot break out of its quotes. Galera's function takes
// whole seconds and reads a fraction as 0, so its timeout is seconds rounded down: under a
// second it checks whether the node has the position already and waits for nothing.
func (p Position) WaitText(seconds float64) string {
	switch p.flavor {
	case MySQL:
		return fmt.Sprintf("SELECT WAIT_FOR_EXECUTED_GTID_SET('%s', %.3f)", p.text, seconds)
	case Galera:
		return fmt.Sprintf("SELECT WSREP_SYNC_WAIT_UPTO_GTID('%s', %d)", p.text, int64(seconds))
	}
	return fmt.Sprintf("SELECT MASTER_GTID_WAIT('%s', %.3f)", p.text, seconds)
}

// Flavor returns the flavor p was parsed as.
func (p Position) Flavor() Flavor { return p.flavor }
