package lbd

import (
	"context"
	"database/sql"
	"github.com/lbd-go/lbd/internal/testkit"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/lbd-go/lbd/internal/mysqlfake"
)

// fuzzPhases are the points FuzzHostileProxy's first input byte chooses (its low 2 bits); the
// next 2 bits choose what the server does after the bytes (continue, stall, close, reset), and
// the 2 after those the transport (hostileTransports; 3 is plain too).
var fuzzPhases = []mysqlfake.Phase{mysqlfake.PhaseAccept, mysqlfake.PhaseGreeting, mysqlfake.PhaseAuth, mysqlfake.PhaseCommand}

// fuzzInput encodes a catalogue fault over the transport hostileTransports[tr] as
// FuzzHostileProxy's input.
func fuzzInput(f mysqlfake.Fault, tr int) []byte {
	ph, b := mysqlfake.Render(f, mysqlfake.Config{})
	sel := byte(0)
	for i, p := range fuzzPhases {
		if p == ph {
			sel = byte(i)
		}
	}
	return append([]byte{sel | byte(f.After)<<2 | byte(tr)<<4}, b...)
}

// FuzzHostileProxy answers, at the phase the first input byte chooses, with exactly the rest of
// the input, and drives a probe-like query and an application query through lbd. Every call must
// return within its deadline plus slack, without a panic, and leave no goroutine behind. The
// seed corpus holds every fault of the mysqlfake catalogue; the Heavy ones (a huge column count)
// only with LBD_HOSTILE_HEAVY=1, since an unguarded driver allocates without bound on them.
func FuzzHostileProxy(f *testing.F) {
	testkit.SkipUnlessLong(f)
	for _, fault := range mysqlfake.Catalogue() {
		if fault.Heavy && os.Getenv("LBD_HOSTILE_HEAVY") == "" {
			continue
		}
		for tr := range hostileTransports {
			f.Add(fuzzInput(fault, tr))
		}
	}
	// One fake per transport.
	srvs := make([]*mysqlfake.Server, len(hostileTransports))
	dsns := make([]string, len(hostileTransports))
	for i, tr := range hostileTransports {
		cfg := mysqlfake.Config{StallTimeout: 5 * time.Second, IOTimeout: time.Second}
		params := transportParams(f, tr, &cfg)
		srv, err := mysqlfake.New(cfg)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { srv.Close() })
		// Short bounds: every input runs against these fakes, and only panics, hangs and leaks
		// are judged, so a slow answer costs nothing but time.
		srvs[i] = srv
		dsns[i] = "u:p@lb(" + srv.Addr() + ")/db?timeout=100ms&readTimeout=150ms&writeTimeout=150ms" + params
	}
	// The goroutine baseline is taken at the first input, once the fuzzing engine's own
	// goroutines (signal handling, the worker's server) are running.
	baseline := -1

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		if baseline < 0 {
			baseline = runtime.NumGoroutine()
		}
		phase := fuzzPhases[int(in[0]&3)]
		after := mysqlfake.Action(in[0] >> 2 & 3)
		tr := int(in[0] >> 4 & 3)
		if tr >= len(hostileTransports) {
			tr = 0
		}
		srv, dsn := srvs[tr], dsns[tr]
		srv.ClearFaults()
		srv.AddFault(mysqlfake.Fault{Name: "fuzz", Phase: phase, Bytes: mysqlfake.Raw(in[1:]), After: after})
		defer srv.ClearFaults()

		c, err := NewConnector(dsn, append(quiet(), WithLogger(discardLogger()))...)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		for _, q := range []string{probeQuery, "/* hostile */ SELECT 1"} {
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			done := make(chan struct{})
			go func() {
				defer close(done)
				var v string
				_ = db.QueryRowContext(ctx, q).Scan(&v)
			}()
			select {
			case <-done:
			case <-time.After(150*time.Millisecond + hostileSlack):
				cancel()
				t.Fatalf("%q did not return within its deadline plus %v", q, hostileSlack)
			}
			cancel()
		}
		closed := make(chan struct{})
		go func() { db.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(hostileSlack):
			t.Fatal("db.Close did not return")
		}
		deadline := time.Now().Add(3 * time.Second)
		for srv.Open() != 0 || runtime.NumGoroutine() > baseline+2 {
			if time.Now().After(deadline) {
				var stacks strings.Builder
				pprof.Lookup("goroutine").WriteTo(&stacks, 1)
				t.Fatalf("leak: %d sockets open on the server, %d goroutines (baseline %d):\n%s", srv.Open(), runtime.NumGoroutine(), baseline, stacks.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
