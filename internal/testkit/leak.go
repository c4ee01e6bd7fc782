package testkit

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The leak checks below do what go.uber.org/goleak's VerifyTestMain, VerifyNone and
// IgnoreCurrent do, with the same rules for the testing package's own goroutines. They live
// here so that the root module's tests need no module beyond go-sql-driver: every module a
// module's tests import is listed in its go.mod and so lands in each user's module graph
// (goleak's own tests bring testify and its dependencies along).

// leakWait bounds how long a check waits for goroutines that are on their way out.
const leakWait = 5 * time.Second

// Goroutines is a set of goroutine ids, from IgnoreCurrent.
type Goroutines map[string]bool

// goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id, state, first string // first is the function at the top of the stack
	text             string
}

// stacks returns every goroutine but the calling one.
func stacks() []goroutine {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []goroutine
	for i, block := range strings.Split(strings.TrimSpace(string(buf)), "\n\n") {
		if i == 0 {
			continue // runtime.Stack puts the calling goroutine first
		}
		header, rest, _ := strings.Cut(block, "\n")
		// "goroutine 7 [chan receive, 2 minutes]:"
		g := goroutine{text: block}
		if f := strings.Fields(header); len(f) >= 3 {
			g.id = f[1]
		}
		if _, st, ok := strings.Cut(header, "["); ok {
			g.state, _, _ = strings.Cut(st, "]")
		}
		first, _, _ := strings.Cut(rest, "\n")
		if i := strings.LastIndex(first, "("); i > 0 {
			first = first[:i]
		}
		g.first = first
		out = append(out, g)
	}
	return out
}

// background reports the goroutines that are not the code under test's: the testing
// package's waiting runners, os/signal's loop, the tracer, cgo's syscall goroutines.
func (g goroutine) background() bool {
	switch g.first {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		return strings.HasPrefix(g.state, "chan receive")
	case "os/signal.signal_recv", "os/signal.loop":
		return true
	}
	return strings.Contains(g.text, "runtime.ensureSigM") || strings.Contains(g.text, "runtime.ReadTrace") ||
		(strings.Contains(g.text, "runtime.goexit") && strings.HasPrefix(g.state, "syscall"))
}

// leaked waits up to leakWait for every goroutine outside ignore and the background ones to
// end, and returns the stacks of those that did not.
func leaked(ignore Goroutines) []string {
	deadline := time.Now().Add(leakWait)
	for {
		var left []string
		for _, g := range stacks() {
			if !ignore[g.id] && !g.background() {
				left = append(left, g.text)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// IgnoreCurrent returns the goroutines running now (but the caller), for VerifyNone to
// ignore.
func IgnoreCurrent() Goroutines {
	ids := Goroutines{}
	for _, g := range stacks() {
		ids[g.id] = true
	}
	return ids
}

// VerifyNone fails t when a goroutine other than the caller, the ignored ones and the
// testing package's own is still running after up to 5 s.
func VerifyNone(t testing.TB, ignore ...Goroutines) {
	t.Helper()
	all := Goroutines{}
	for _, set := range ignore {
		for id := range set {
			all[id] = true
		}
	}
	if left := leaked(all); len(left) > 0 {
		t.Errorf("%d goroutines outlived the test:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// VerifyTestMain runs m and then fails the package, with every leftover goroutine's stack,
// when a goroutine is still running 5 s after the last test; it exits with m's code
// otherwise. Call it from TestMain.
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if left := leaked(nil); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "%d goroutines outlived the tests:\n\n%s\n", len(left), strings.Join(left, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}
