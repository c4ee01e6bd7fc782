package lbd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/lbd-go/lbd/internal/mysqlfake"
	"github.com/lbd-go/lbd/internal/testkit"
)

// The hostile suite: one node of two is a mysqlfake server armed with one fault of the
// catalogue, the other is healthy. Each fault is driven through the probe and through the
// application's statements in both balance modes; every case checks that the call returns an
// error (not a panic) in bounded time, that a protocol break wraps ErrProtocol, that the
// hostile node is taken out while the healthy one serves, and that Close leaves no goroutine
// and no socket behind.
//
// Faults the catalogue marks Heavy (a column count of 2^24 or 2^32, which an unguarded driver
// tries to allocate) run in a child process of this test binary under `ulimit -v`; see
// runHeavy.

const (
	// The healthy node must greet and answer probes within these bounds while other cases
	// and packages load the machine, and a stalled dial must end before the call's deadline.
	hostileDialTimeout   = 500 * time.Millisecond  // the DSN timeout
	hostileStmtDeadline  = 1200 * time.Millisecond // each application call's context deadline
	hostileProbeInterval = 500 * time.Millisecond
	hostileProbeTimeout  = 500 * time.Millisecond
	hostileSlack         = 2 * time.Second // a noisy 2-core machine
)

// hostileApp is one way the application meets a node's answers.
type hostileApp struct {
	name   string
	phases []mysqlfake.Phase // the command phases this path reaches (connection phases: see below)
	run    func(ctx context.Context, db *sql.DB) error
}

var resultPhases = []mysqlfake.Phase{mysqlfake.PhaseResultHeader, mysqlfake.PhaseColumns, mysqlfake.PhaseColumnsEOF, mysqlfake.PhaseRows, mysqlfake.PhaseResultEnd}

// hostileApps are the application paths. Only "scan" also meets the connection phases: every
// path dials the same way.
var hostileApps = []hostileApp{
	{name: "scan", phases: resultPhases, run: func(ctx context.Context, db *sql.DB) error {
		var v string
		return db.QueryRowContext(ctx, "/* hostile */ SELECT 1").Scan(&v)
	}},
	{name: "rows", phases: resultPhases, run: func(ctx context.Context, db *sql.DB) error {
		rows, err := db.QueryContext(ctx, "/* hostile */ SELECT 1")
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				return err
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return rows.Close()
	}},
	{name: "exec", phases: []mysqlfake.Phase{mysqlfake.PhaseAnswer}, run: func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, "/* hostile */ UPDATE t SET x = 1")
		return err
	}},
	{name: "prepared", phases: append([]mysqlfake.Phase{mysqlfake.PhasePrepare}, resultPhases...), run: func(ctx context.Context, db *sql.DB) error {
		st, err := db.PrepareContext(ctx, "/* hostile */ SELECT ?")
		if err != nil {
			return err
		}
		defer st.Close()
		var v string
		if err := st.QueryRowContext(ctx, 1).Scan(&v); err != nil {
			return err
		}
		return st.Close()
	}},
}

// wellFormed names the catalogue's faults whose bytes are valid protocol (a wrong value, a
// LOCAL INFILE request, an unknown auth plugin): the call may fail, but not with ErrProtocol
// necessarily.
var wellFormed = map[string]bool{
	"rows/value_2": true, "rows/null_value": true,
	"header/local_infile_empty": true, "header/local_infile": true,
	"auth/switch_unknown_plugin": true, "auth/switch_no_data": true,
	// A lone 0x00 where the end packet belongs is a row holding one empty value; the server
	// then sends nothing more, so the call ends at its deadline.
	"end/ok_1byte": true,
}

// harmless names the catalogue's faults whose bytes break the protocol where go-sql-driver
// does not look (a column definition without its two filler bytes, a malformed EOF after the
// column definitions, which it skips unread, a row with a value more than its columns): lbd
// lets them through, so the node may stay up.
var harmless = map[string]bool{
	"columns/def_cut_field12": true, "columns_eof/eof_1byte": true, "rows/two_fields": true,
	"answer/ok_info_past_end": true, // the info string after the status, which go-sql-driver never reads
}

// transportParams sets cfg up for the transport tr and returns the DSN parameters that ask for
// it: over TLS the client checks the fake's certificate for the node's own address.
func transportParams(t testing.TB, tr string, cfg *mysqlfake.Config) string {
	switch tr {
	case "tls":
		cfg.TLS = hostileTLS(t)
		return "&tls=" + hostileTLSName
	case "compress":
		cfg.Compress = true
		return "&compress=true"
	}
	return ""
}

// hostileTLSName is the go-sql-driver TLS configuration that trusts the fakes' certificate.
const hostileTLSName = "lbd-hostile"

var hostileTLSOnce struct {
	sync.Once
	server *tls.Config
	err    error
}

// hostileTLS returns the fakes' server configuration (a certificate for 127.0.0.1), registering
// the client's side as hostileTLSName on first use.
func hostileTLS(t testing.TB) *tls.Config {
	o := &hostileTLSOnce
	o.Do(func() {
		var roots *x509.CertPool
		o.server, roots, o.err = mysqlfake.SelfSigned("127.0.0.1")
		if o.err == nil {
			o.err = mysql.RegisterTLSConfig(hostileTLSName, &tls.Config{RootCAs: roots})
		}
	})
	if o.err != nil {
		t.Fatal(o.err)
	}
	return o.server
}

// loginThenStall names the faults that let the login complete and then stop answering: the
// node is hung rather than broken, so the first statement sent there fails at its deadline
// and the probe takes the node out.
var loginThenStall = map[string]bool{"auth/whole_stall": true}

// expectProtocol reports whether a call failing on f must wrap ErrProtocol: f sends broken
// bytes and lets the client read them (stalls, closes and resets give timeout and connection
// errors instead).
func expectProtocol(tr string, f mysqlfake.Fault) bool {
	return f.After == mysqlfake.Continue && f.Bytes != nil && !wellFormed[f.Name] && !harmlessOn(tr, f)
}

// harmlessOn reports whether f is harmless over the transport tr: inside the compressed
// protocol the packets' own sequence numbers are not checked (servers renumber them at each
// flush of their buffer), and lbd numbers them as go-sql-driver expects, so a fault that only
// breaks the numbering (a wrong number, a missing EOF after the column definitions, which
// go-sql-driver skips unread) breaks nothing there.
func harmlessOn(tr string, f mysqlfake.Fault) bool {
	seqOnly := strings.HasSuffix(f.Name, "/wrong_seq") || f.Name == "columns_eof/missing"
	return harmless[f.Name] || tr == "compress" && !f.Phase.Connection() && seqOnly
}

// TestHostile runs every case as a parallel subtest: the cases mostly wait on deadlines and
// probes, not on the CPU (TestMain raises -test.parallel for them). The transports run in
// parallel too, so that one transport's Heavy cases, which run in a child process one at a time
// as the catalogue is walked, overlap the other transports' cases rather than hold them all
// back. Goroutine leaks are therefore checked once all cases have ended, sockets per case.
func TestHostile(t *testing.T) {
	heavyChild := os.Getenv(heavyChildEnv) != ""
	if !heavyChild {
		before := testkit.IgnoreCurrent()
		t.Cleanup(func() { testkit.VerifyNone(t, before) }) // runs after every parallel subtest
	}
	// Without LBD_TEST_LONG=1 each fault meets one of its paths, the paths taking turns over the
	// catalogue, so that every fault and every path is still seen; the long run (and the heavy
	// child) covers the whole matrix.
	whole := testkit.Long() || heavyChild
	for k, tr := range hostileTransports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			hostileCatalogue(t, tr, k, whole, heavyChild)
		})
	}
}

// hostileTransports are the transports the catalogue runs over: plain packets, TLS, and the
// compressed protocol. Over TLS and compression lbd's guard reads the packets beneath the
// encryption or the framing, as on a plain connection.
var hostileTransports = []string{"plain", "tls", "compress"}

// hostileCatalogue runs the catalogue over one transport; k shifts which path each fault meets
// in the short run, so that the transports together see more pairs.
func hostileCatalogue(t *testing.T, tr string, k int, whole, heavyChild bool) {
	for i, f := range mysqlfake.Catalogue() {
		if heavyChild && !f.Heavy {
			continue
		}
		type path struct {
			name string
			run  func(t *testing.T)
		}
		var paths []path
		if f.Phase.Connection() || contains(resultPhases, f.Phase) {
			paths = append(paths, path{"probe/" + f.Name, func(t *testing.T) { runHostile(t, tr, f, "connection", nil) }})
		}
		for _, mode := range []string{"connection", "statement"} {
			for _, app := range hostileApps {
				if f.Phase.Connection() && app.name != "scan" || !f.Phase.Connection() && !contains(app.phases, f.Phase) {
					continue
				}
				paths = append(paths, path{mode + "/" + app.name + "/" + f.Name, func(t *testing.T) { runHostile(t, tr, f, mode, &app) }})
			}
		}
		if !whole && len(paths) > 0 {
			j := (i + k) % len(paths)
			paths = paths[j : j+1]
		}
		for _, p := range paths {
			t.Run(p.name, p.run)
		}
	}
}

func contains(phases []mysqlfake.Phase, p mysqlfake.Phase) bool {
	for _, q := range phases {
		if q == p {
			return true
		}
	}
	return false
}

// runHostile runs one case: f armed on the hostile node, driven through app (nil: through the
// probe only) in the balance mode, over the transport tr (one of hostileTransports).
func runHostile(t *testing.T, tr string, f mysqlfake.Fault, mode string, app *hostileApp) {
	if f.Heavy && os.Getenv(heavyChildEnv) == "" {
		runHeavy(t) // one child at a time: each may take gigabytes when the guard fails
		return
	}
	t.Parallel()
	cfg := mysqlfake.Config{StallTimeout: 20 * time.Second}
	params := transportParams(t, tr, &cfg)
	healthy, hostile := mysqlfake.Start(t, cfg), mysqlfake.Start(t, cfg)
	// The fault meets the probe alone, or the application's statements alone, so each path is
	// seen to take the node out by itself; a connection-phase fault meets every dial.
	var hits atomic.Int64
	match := mysqlfake.QueryContains(probeQuery)
	if app != nil {
		match = mysqlfake.QueryContains("/* hostile */")
	}
	f.Match = func(c mysqlfake.Command) bool {
		if match(c) {
			hits.Add(1)
			return true
		}
		return false
	}
	hostile.AddFault(f)

	logs := &logRecorder{}
	dialTimeout := hostileDialTimeout
	if tr == "tls" {
		// A TLS handshake under the race detector, with other cases and packages loading the
		// machine, may take most of the plain bound.
		dialTimeout *= 2
	}
	dsn := fmt.Sprintf("u:p@lb(%s,%s)/db?timeout=%s&balance=%s%s", hostile.Addr(), healthy.Addr(), dialTimeout, mode, params)
	opts := fast(hostileProbeInterval, hostileProbeTimeout, time.Hour, logs)
	if app != nil {
		// Once a node broke the protocol lbd sends the next statements to the healthy one, so
		// one violation must be enough to see the node taken out.
		opts = append(opts, WithFatalErrorThreshold(1))
	}
	c, err := NewConnector(dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	closed := false
	t.Cleanup(func() {
		if !closed {
			db.Close()
		}
	})
	// On a failure, close the servers first (cleanups run last-in first-out), so a stalled
	// socket cannot hold db.Close.
	t.Cleanup(func() { hostile.Close(); healthy.Close() })

	state := func() NodeState { s, _ := nodeState(c, hostile.Addr()); return s }
	takenOut := func() bool {
		ns, _ := c.Stats().Node(hostile.Addr())
		return ns.State != StateUp || ns.Transitions > 0
	}
	check := hostileApps[0]
	requireDown := true
	// A close or reset right after a whole end packet, OK answer or prepare answer comes
	// after a complete answer: the next checkout finds the connection dead, which says
	// nothing against the node; the probe retries such a loss on a fresh connection, which
	// answers in full again.
	afterAnswer := strings.Contains(f.Name, "/whole_") &&
		(f.Phase == mysqlfake.PhaseResultEnd || f.Phase == mysqlfake.PhaseAnswer || f.Phase == mysqlfake.PhasePrepare)
	if app == nil {
		if harmlessOn(tr, f) || afterAnswer {
			waitFor(t, 5*time.Second, "the probe to meet the fault", func() bool { return hits.Load() > 0 })
		} else {
			waitFor(t, 5*time.Second, "the probe to take the hostile node out", takenOut)
		}
	} else {
		check = *app
		// Call until the node has met the fault.
		for i := 0; i < 12 && (hits.Load() == 0 || f.Phase.Connection()) && !(f.Phase.Connection() && takenOut()); i++ {
			err := callBounded(t, *app, db)
			switch {
			case err == nil:
			case loginThenStall[f.Name]:
			case f.Phase.Connection():
				t.Errorf("call %d: %v; the healthy node should have served it", i, err)
			case expectProtocol(tr, f) && !errors.Is(err, ErrProtocol):
				t.Errorf("call %d: %v; want an error wrapping lbd.ErrProtocol", i, err)
			}
		}
		if !f.Phase.Connection() && hits.Load() == 0 {
			if mode == "statement" {
				// Statement mode may bind every statement to the healthy node (least busy).
				t.Skipf("statement mode sent no statement to the hostile node (%d commands there)", hostile.Commands())
			}
			t.Fatalf("the application's statements never reached the hostile node (%d commands, %d connections there); lbd logged:\n%s", hostile.Commands(), hostile.Accepted(), strings.Join(logs.Lines(), "\n"))
		}
		// A stall of the application's statements is the caller's deadline, which lbd does not
		// blame on the node (the probe cases cover stalled nodes); a well-formed answer is no
		// fault of the node.
		requireDown = f.Phase.Connection() || f.After != mysqlfake.Stall && !wellFormed[f.Name] && !harmlessOn(tr, f) && !afterAnswer
		if requireDown {
			waitFor(t, 5*time.Second, "the hostile node to be taken out", takenOut)
		}
	}
	// The healthy node keeps serving: every call made while the hostile node stays down (no
	// transition during the call: a good probe may bring it back, and the next statement may
	// meet the fault again) succeeds.
	transitions := func() uint64 { ns, _ := c.Stats().Node(hostile.Addr()); return ns.Transitions }
	served := 0
	for i := range 3 {
		before, wasDown := transitions(), state() != StateUp
		err := callBounded(t, check, db)
		if err != nil {
			t.Logf("call %d after the fault: %v", i, err)
		}
		if err == nil {
			served++
		} else if wasDown && transitions() == before {
			t.Errorf("call %d failed while the hostile node was down: %v; the healthy node saw %d commands", i, err, healthy.Commands())
		}
	}
	// Statement mode re-prepares a statement on whichever node a call binds; with the
	// hostile node flapping (a good probe brings it back within two probe intervals, the
	// next prepare there breaks again) every call may meet it. That the node is out of
	// rotation during the calls is the node table's business (a transition seen in order),
	// not this suite's.
	flapping := mode == "statement" && app != nil && app.name == "prepared"
	if served == 0 && requireDown && !flapping {
		t.Errorf("no call succeeded; the healthy node saw %d commands", healthy.Commands())
	}

	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	select {
	case <-done:
	case <-time.After(hostileProbeTimeout + hostileSlack):
		t.Fatalf("db.Close took more than %v", hostileProbeTimeout+hostileSlack)
	}
	closed = true
	if took := time.Since(start); took > hostileProbeTimeout+hostileSlack {
		t.Errorf("db.Close took %v", took)
	}
	waitFor(t, 5*time.Second, "both servers to see every socket closed", func() bool {
		return hostile.Open() == 0 && healthy.Open() == 0
	})
	hostile.Close()
	healthy.Close()
}

// TestHostileCloseWithAStuckProbe closes the DB while the probe waits on a result that stalled
// after its column definitions: Close must return within one probe timeout plus slack.
func TestHostileCloseWithAStuckProbe(t *testing.T) {
	for _, ph := range []mysqlfake.Phase{mysqlfake.PhaseColumns, mysqlfake.PhaseRows, mysqlfake.PhaseResultEnd} {
		t.Run(ph.String(), func(t *testing.T) {
			before := testkit.IgnoreCurrent()
			hostile := mysqlfake.Start(t, mysqlfake.Config{StallTimeout: 20 * time.Second})
			var probes atomic.Int64
			hostile.AddFault(mysqlfake.Fault{Phase: ph, After: mysqlfake.Stall, Match: func(c mysqlfake.Command) bool {
				if strings.Contains(c.Text, probeQuery) {
					probes.Add(1)
					return true
				}
				return false
			}})
			c, err := NewConnector("u:p@lb("+hostile.Addr()+")/db?timeout=500ms", fast(hostileProbeInterval, hostileProbeTimeout, time.Hour, &logRecorder{})...)
			if err != nil {
				t.Fatal(err)
			}
			db := sql.OpenDB(c)
			t.Cleanup(func() { hostile.Close(); db.Close() })
			waitFor(t, 5*time.Second, "a probe to meet the stalled result", func() bool { return probes.Load() > 0 })
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- db.Close() }()
			select {
			case <-done:
			case <-time.After(hostileProbeTimeout + hostileSlack):
				t.Fatalf("db.Close still blocked after %v with a probe stuck on a stalled %s", hostileProbeTimeout+hostileSlack, ph)
			}
			t.Logf("db.Close took %v", time.Since(start))
			waitFor(t, 5*time.Second, "the server to see the probe's socket closed", func() bool { return hostile.Open() == 0 })
			hostile.Close()
			testkit.VerifyNone(t, before)
		})
	}
}

// callBounded runs app once under the statement deadline, turning a panic into a failure, and
// checks that it returned within the deadline plus slack.
func callBounded(t *testing.T, app hostileApp, db *sql.DB) (err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileStmtDeadline)
	defer cancel()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v\n%s", p, debug.Stack())
			}
		}()
		done <- app.run(ctx, db)
	}()
	bound := min(hostileDialTimeout, hostileStmtDeadline) + hostileStmtDeadline + hostileSlack
	select {
	case err = <-done:
	case <-time.After(bound):
		t.Fatalf("%s did not return within %v", app.name, bound)
	}
	if err != nil && strings.HasPrefix(err.Error(), "panic: ") {
		t.Fatalf("%s panicked: %v", app.name, err)
	}
	if took := time.Since(start); took > hostileStmtDeadline+hostileSlack {
		t.Errorf("%s took %v (deadline %v)", app.name, took, hostileStmtDeadline)
	}
	return err
}

// heavyChildEnv is set in the child process that runs a Heavy fault under a memory limit.
const heavyChildEnv = "LBD_HOSTILE_HEAVY_CHILD"

// heavyMemoryKiB is the child's virtual memory limit (ulimit -v).
const heavyMemoryKiB = 4 << 20

// heavyMu lets one Heavy child run at a time, whichever transport it belongs to: each may take
// gigabytes when the guard fails.
var heavyMu sync.Mutex

// runHeavy re-runs the current test in a child process of this test binary under ulimit -v and
// GOMEMLIMIT, so an unbounded allocation ends the child ("out of memory"), not the machine.
func runHeavy(t *testing.T) {
	heavyMu.Lock()
	defer heavyMu.Unlock()
	pattern := "^" + strings.ReplaceAll(regexpQuote(t.Name()), "/", "$/^") + "$"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, heavyMemoryKiB),
		os.Args[0], "-test.run="+pattern, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), heavyChildEnv+"=1", "GOMEMLIMIT=1GiB")
	out, err := cmd.CombinedOutput()
	if err == nil && strings.Contains(string(out), "--- SKIP: "+t.Name()) {
		t.Skipf("skipped in the child:\n%s", head(string(out), 10))
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child under ulimit -v %d KiB: %v\n%s", heavyMemoryKiB, err, head(string(out), 25))
	}
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// head returns the first lines of s, where a crashed child says why.
func head(s string, lines int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[:min(lines, len(l))], "\n")
}
