package remote

import (
	"context"
	"github.com/lbd-go/lbd/internal/remotefake"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

const failLine = "no config-server gave a usable node list"

// Every kind of bad answer keeps the list and is logged once when it starts and once when it
// ends, however many polls it lasts; no line and no error shows the API key.
func TestFailuresKeepTheListAndLogOncePerCondition(t *testing.T) {
	const key = "s3cr3t-api-key"
	cs := remotefake.New(t)
	cs.SetKey(key)
	list := []string{"10.0.0.1:2883", "10.0.0.2:2883"}
	cs.SetList("im_user", list...)
	elsewhere := remotefake.New(t) // where the redirect points: another port, another list
	elsewhere.SetList("im_user", "10.9.9.9:2883")
	cs.SetRedirect(elsewhere.URL())
	logs := &logRecorder{}
	src, u, _ := startSource(t, Config{
		Servers: []string{cs.Addr()}, Schema: "im_user", APIKey: key,
		// A healthy answer must never take the timeout on a loaded machine, or it would log a
		// condition of its own: 1 s, while a hung server still costs only a few polls.
		PollInterval: 5 * time.Millisecond, Timeout: time.Second,
		DisableCache: true, Logger: logs.logger(),
	}, nil)

	polls := func(n int) {
		t.Helper()
		start := cs.Count()
		waitFor(t, 10*time.Second, "polls", func() bool { return cs.Count() >= start+n })
	}
	type cond struct {
		name  string
		on    func()
		off   func()
		inLog string
	}
	conds := []cond{
		{"bad JSON", func() { cs.SetFault("garbage") }, func() { cs.SetFault("") }, "not JSON"},
		{"empty list", func() { cs.SetFault("empty") }, func() { cs.SetFault("") }, "empty proxy list"},
		{"malformed entry", func() { cs.SetFault("malformed") }, func() { cs.SetFault("") }, "not-an-address"},
		{"unknown schema", func() { cs.DropSchema("im_user") }, func() { cs.SetList("im_user", list...) }, "does not know the schema"},
		{"bad key", func() { cs.SetKey("another") }, func() { cs.SetKey(key) }, "refused the API key"},
		{"HTTP 500", func() { cs.SetFault("status500") }, func() { cs.SetFault("") }, "HTTP status 500"},
		{"code 500", func() { cs.SetFault("code500") }, func() { cs.SetFault("") }, "answer code 500"},
		{"hung", func() { cs.SetFault("hang") }, func() { cs.SetFault("") }, "no answer within 1s"},
		{"redirect", func() { cs.SetFault("redirect") }, func() { cs.SetFault("") }, "redirects to " + elsewhere.URL()},
		{"huge md5", func() { cs.SetFault("hugemd5") }, func() { cs.SetFault("") }, "is not 32 hex digits"},
		{"huge body", func() { cs.SetFault("hugebody") }, func() { cs.SetFault("") }, "larger than"},
		{"huge header", func() { cs.SetFault("hugeheader") }, func() { cs.SetFault("") }, "header"},
	}
	for i, c := range conds {
		c.on()
		polls(4)
		c.off()
		waitFor(t, 10*time.Second, "recovery from "+c.name, func() bool {
			return logs.count("answers again") == i+1
		})
		if n := logs.count(failLine, c.inLog); n != 1 {
			logs.dump(t)
			t.Fatalf("%s: %d lines mentioning %q, want 1", c.name, n, c.inLog)
		}
	}
	// One condition straight into another: one line each.
	cs.SetFault("garbage")
	polls(3)
	cs.SetFault("empty")
	polls(3)
	cs.SetFault("")
	waitFor(t, 10*time.Second, "the last recovery", func() bool { return logs.count("answers again") == len(conds)+1 })
	polls(3)
	src.Close()

	if n := logs.count(failLine); n != len(conds)+2 {
		logs.dump(t)
		t.Errorf("%d failure lines, want %d", n, len(conds)+2)
	}
	if n := logs.count("answers again"); n != len(conds)+1 {
		t.Errorf("%d recovery lines, want %d", n, len(conds)+1)
	}
	if u.Len() != 0 {
		t.Errorf("the source pushed %d sets; the list never changed", u.Len())
	}
	if n := elsewhere.Count(); n != 0 {
		t.Errorf("a redirect was followed: the other server got %d requests", n)
	}
	for i, r := range cs.Requests() {
		if md5, ok := r.Query["md5"]; ok && len(md5[0]) != 32 {
			t.Errorf("request %d sent back an md5 of %d bytes", i, len(md5[0]))
		}
	}
	for _, line := range logs.all() {
		if strings.Contains(line, key) {
			t.Errorf("a log line shows the API key: %s", line)
		}
		if strings.HasPrefix(line, "WARN") && !strings.Contains(line, "schema=im_user") {
			t.Errorf("a warning does not name the schema: %s", line)
		}
	}
}

// A config-server that stays down is logged once, however long it stays down.
func TestUnreachableLoggedOnce(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	logs := &logRecorder{}
	src, _, _ := startSource(t, Config{
		Servers: []string{cs.Addr()}, Schema: "s", PollInterval: 5 * time.Millisecond,
		DisableCache: true, Logger: logs.logger(),
	}, nil)
	// The config-server dies; its port now takes connections and closes them at once, which
	// lets the test count the polls.
	addr := cs.Addr()
	cs.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on the dead config-server's port again: %v", err)
	}
	var accepts atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepts.Add(1)
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()
	waitFor(t, 5*time.Second, "ten failed polls", func() bool { return accepts.Load() >= 10 })
	src.Close()
	if n := logs.count(failLine, "unreachable"); n != 1 {
		logs.dump(t)
		t.Fatalf("%d lines for an unreachable config-server, want 1", n)
	}
}

// Close cancels a request in flight instead of waiting for its timeout.
func TestCloseCancelsAHungRequest(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	src, _, _ := startSource(t, Config{
		Servers: []string{cs.Addr()}, Schema: "s", PollInterval: 5 * time.Millisecond,
		Timeout: time.Minute, DisableCache: true,
	}, nil)
	cs.SetFault("hang")
	n := cs.Count()
	waitFor(t, 5*time.Second, "a hung poll", func() bool { return cs.Count() > n })
	done := make(chan struct{})
	go func() {
		src.Close()
		src.Close() // idempotent
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for the hung request")
	}
	if _, err := src.Start(context.Background(), func(nodes.Set) {}); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

// Several config-servers are tried in turn, starting with the one that answered last.
func TestServersTriedInTurn(t *testing.T) {
	a, b := remotefake.New(t), remotefake.New(t)
	for _, cs := range []*remotefake.Server{a, b} {
		cs.SetList("s", "10.0.0.1:1")
	}
	logs := &logRecorder{}
	_, u, _ := startSource(t, Config{
		Servers: []string{a.Addr(), b.Addr()}, Schema: "s", PollInterval: 5 * time.Millisecond,
		Timeout: 100 * time.Millisecond, DisableCache: true, Logger: logs.logger(),
	}, nil)
	waitFor(t, 5*time.Second, "polls to a", func() bool { return a.Count() >= 3 })
	if b.Count() != 0 {
		t.Fatalf("b was asked while a answered")
	}
	a.SetFault("hang")
	for _, cs := range []*remotefake.Server{a, b} {
		cs.SetList("s", "10.0.0.1:1", "10.0.0.2:1")
	}
	waitFor(t, 5*time.Second, "the change through b", func() bool { return u.Len() == 1 })
	nA := a.Count()
	waitFor(t, 5*time.Second, "more polls to b", func() bool { return b.Count() >= 5 })
	if a.Count() != nA {
		t.Errorf("a was asked again while b answered")
	}
	if got := u.Last().Addrs(); !slices.Equal(got, []string{"10.0.0.1:1", "10.0.0.2:1"}) {
		t.Fatalf("pushed %v", got)
	}
	if n := logs.count("config-server failed; the next one answered", a.Addr()); n != 1 {
		logs.dump(t)
		t.Errorf("%d lines about a failing, want 1", n)
	}
	if logs.count(failLine) != 0 {
		t.Errorf("a round failed although b answered")
	}
}
