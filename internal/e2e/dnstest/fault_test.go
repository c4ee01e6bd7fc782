package dnstest

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"github.com/lbd-go/lbd/nodes"
	"github.com/lbd-go/lbd/nodes/dns"
)

// faultTimeout is the lookup timeout of the fault tests' sources: short, so that a silent
// server costs little, and long enough for a loaded machine to answer a loopback query in.
const faultTimeout = 250 * time.Millisecond

// silent never answers.
func silent(*dnsServer, mdns.ResponseWriter, *mdns.Msg) bool { return true }

// late answers from the records, but only after twice faultTimeout, when the asker has given up.
func late(s *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
	t := time.NewTimer(2 * faultTimeout)
	defer t.Stop()
	select {
	case <-t.C:
		s.answer(w, r)
	case <-s.done:
	}
	return true
}

// rcode answers every query with code and no record.
func rcode(code int) fault {
	return func(_ *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
		m := new(mdns.Msg)
		m.SetRcode(r, code)
		w.WriteMsg(m)
		return true
	}
}

// truncated sets the TC bit on an empty answer, over UDP and TCP alike.
func truncated(_ *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
	m := new(mdns.Msg)
	m.SetReply(r)
	m.Truncated = true
	w.WriteMsg(m)
	return true
}

// isTCP tells whether w answers over TCP.
func isTCP(w mdns.ResponseWriter) bool { return w.LocalAddr().Network() == "tcp" }

// cut sends the asker to TCP (TC over UDP), then closes the connection without an answer.
func cut(s *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
	if !isTCP(w) {
		return truncated(s, w, r)
	}
	w.Close()
	return true
}

// garbage answers with the query's ID, the flags of an answer, then random bytes.
func garbage(_ *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
	b := make([]byte, 12+rand.IntN(200))
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	binary.BigEndian.PutUint16(b, r.Id)
	b[2], b[3] = 0x84, 0x00 // QR, AA, NOERROR
	w.Write(b)
	return true
}

// replyBytes is the start of a well-formed answer to r: header and question, no record.
func replyBytes(r *mdns.Msg) []byte {
	m := new(mdns.Msg)
	m.SetReply(r)
	b, err := m.Pack()
	if err != nil {
		panic(err)
	}
	return b
}

// compressionLoop answers with one record whose owner name is a pointer to itself.
func compressionLoop(_ *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
	b := replyBytes(r)
	binary.BigEndian.PutUint16(b[6:], 1) // ANCOUNT
	off := len(b)
	b = append(b, 0xC0|byte(off>>8), byte(off))
	b = binary.BigEndian.AppendUint16(b, r.Question[0].Qtype)
	b = binary.BigEndian.AppendUint16(b, mdns.ClassINET)
	b = binary.BigEndian.AppendUint32(b, 1)
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, 127, 0, 0, 9)
	w.Write(b)
	return true
}

// countLie answers with the records but a header that announces 65 535 of them.
func countLie(s *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
	rec := &recorder{ResponseWriter: w}
	s.answer(rec, r)
	b := rec.msg
	binary.BigEndian.PutUint16(b[6:], 0xFFFF)
	w.Write(b)
	return true
}

// recorder keeps the message written to it instead of sending it.
type recorder struct {
	mdns.ResponseWriter
	msg []byte
}

func (r *recorder) WriteMsg(m *mdns.Msg) error {
	b, err := m.Pack()
	r.msg = b
	return err
}

// srvTargets answers SRV questions with one record to each of targets (port 2883), and
// other questions from the records.
func srvTargets(port uint16, targets ...string) fault {
	return func(s *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
		if r.Question[0].Qtype != mdns.TypeSRV {
			return false
		}
		m := new(mdns.Msg)
		m.SetReply(r)
		for _, t := range targets {
			m.Answer = append(m.Answer, &mdns.SRV{Hdr: header(r.Question[0].Name, mdns.TypeSRV), Port: port, Target: t})
		}
		w.WriteMsg(m)
		return true
	}
}

// The faults a DNS server shows: each fails every round of lookups while it lasts.
var faults = []struct {
	name string
	f    fault
}{
	{"silent", silent},
	{"late", late},
	{"SERVFAIL", rcode(mdns.RcodeServerFailure)},
	{"REFUSED", rcode(mdns.RcodeRefused)},
	{"truncated", truncated},
	{"cut", cut},
	{"garbage", garbage},
	{"compression loop", compressionLoop},
	{"count lie", countLie},
	{"target not a host name", srvTargets(2883, `bad\032name.test.`)},
	{"target with an underscore", srvTargets(2883, "_bad.test.")},
	{"SRV port 0", srvTargets(0, "localhost.")},
}

// Every fault of the server keeps the list the source has: no update, one log line when it
// starts, Status saying since when and why, and a Close that does not wait for the server.
// When the server answers again, the new answer is passed on at the next round, with one line.
// The faults run in parallel, each on a server and source of its own, waiting on lookup rounds.
func TestFaultsKeepTheList(t *testing.T) {
	for _, c := range faults {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := startDNS(t)
			srv.setIPs("proxies.test", "127.0.0.1", "127.0.0.2")
			srv.setSRV("_mysql._tcp.proxies.test", record{"localhost", 2883, 1})
			l := &logs{}
			src, err := dns.New(dns.Config{
				Names:           []string{"proxies.test:2883", "_mysql._tcp.proxies.test"},
				Server:          srv.addr,
				Timeout:         faultTimeout,
				RefreshInterval: refresh,
				Logger:          l.Logger(),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			var got updates
			set, err := src.Start(context.Background(), got.Push)
			if err != nil {
				t.Fatal(err)
			}
			st := src.Status()
			if st.Version != set.Version || st.LastGood.IsZero() || st.Failures != 0 || st.LastError != "" {
				t.Fatalf("Status after Start = %+v", st)
			}
			goodAt := st.LastGood

			srv.setFault(c.f)
			faultAt := time.Now()
			waitFor(t, 10*time.Second, "a failed round", func() bool { return src.Status().Failures >= 1 })
			lastGood := src.Status().LastGood
			waitFor(t, 10*time.Second, "three failed rounds", func() bool { return src.Status().Failures >= 3 })
			st = src.Status()
			lines := l.Find("DNS lookup failed")
			if got.Len() != 0 || len(lines) != 1 {
				t.Fatalf("%d updates and %d failure lines, want none and one:\n%s", got.Len(), len(lines), l.All())
			}
			if !st.LastGood.Equal(lastGood) || st.LastGood.Before(goodAt) || st.FailingSince.Before(faultAt) ||
				st.LastError == "" || st.Version != set.Version {
				t.Fatalf("Status during the fault = %+v (fault from %v)", st, faultAt)
			}
			t.Logf("Status after %d failed rounds: %q", st.Failures, st.LastError)

			srv.setFault(nil)
			srv.setIPs("proxies.test", "127.0.0.3")
			back := time.Now()
			waitFor(t, 10*time.Second, "the new answer", func() bool { return got.Len() == 1 })
			t.Logf("new answer passed on %v after the fault ended", time.Since(back).Round(time.Millisecond))
			want := []string{"127.0.0.3:2883", "localhost:2883"}
			if !slices.Equal(got.Last().Addrs(), want) || l.Count("DNS answers again") != 1 {
				t.Fatalf("update %v, want %v; log:\n%s", got.Last().Addrs(), want, l.All())
			}
			if st := src.Status(); st.Failures != 0 || st.LastError != "" || !st.FailingSince.IsZero() || st.Version != got.Last().Version {
				t.Fatalf("Status after the fault = %+v", st)
			}

			srv.setFault(c.f)
			waitFor(t, 10*time.Second, "a failed round", func() bool { return src.Status().Failures >= 1 })
			start := time.Now()
			src.Close()
			if took := time.Since(start); took > faultTimeout/2 {
				t.Errorf("Close took %v during the fault, want it not to wait for the lookups", took)
			}
		})
	}
}

// A resolver given in Config is trusted less than its type suggests: nil records, SRV
// targets that are not host names, more records than a Connector takes; each is a failed
// round, never a panic.
func TestHostileResolver(t *testing.T) {
	many := make([]*net.SRV, nodes.MaxNodes+1)
	for i := range many {
		many[i] = &net.SRV{Target: "p" + strconv.Itoa(i) + ".test.", Port: 2883}
	}
	manyIPs := make([]net.IPAddr, nodes.MaxNodes+1)
	for i := range manyIPs {
		manyIPs[i] = net.IPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i))}
	}
	for _, c := range []struct {
		name string
		res  fakeResolver
		want string // in the error
	}{
		{"nil SRV record", fakeResolver{srv: map[string][]*net.SRV{"_x._tcp.p": {nil, {Target: "a.test.", Port: 1}}}}, "nil"},
		{"SRV target with a space", fakeResolver{srv: map[string][]*net.SRV{"_x._tcp.p": {{Target: "a b.test.", Port: 1}}}}, "a b.test"},
		{"SRV target with a colon", fakeResolver{srv: map[string][]*net.SRV{"_x._tcp.p": {{Target: "a:1", Port: 1}}}}, "a:1"},
		{"SRV target too long", fakeResolver{srv: map[string][]*net.SRV{"_x._tcp.p": {{Target: strings.Repeat("a", 300) + ".", Port: 1}}}}, "long"},
		{"too many SRV records", fakeResolver{srv: map[string][]*net.SRV{"_x._tcp.p": many}}, "MaxNodes"},
		{"too many addresses", fakeResolver{ips: map[string][]net.IPAddr{"p": manyIPs}}, "MaxNodes"},
		{"nil IP", fakeResolver{ips: map[string][]net.IPAddr{"p": {{IP: nil}}}}, "no usable record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := "p:2883"
			if c.res.srv != nil {
				name = "_x._tcp.p"
			}
			src, err := dns.New(dns.Config{Names: []string{name}, Resolver: c.res, Logger: (&logs{}).Logger()})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			set, err := src.Start(context.Background(), func(nodes.Set) {})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Start = %d nodes, %v; want an error mentioning %q", len(set.Nodes), err, c.want)
			}
		})
	}
}

// flapping answers each query with NXDOMAIN or SERVFAIL, at random: every round fails, for a
// reason that changes from round to round.
func flapping(s *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
	if rand.IntN(2) == 0 {
		return rcode(mdns.RcodeNameError)(s, w, r)
	}
	return rcode(mdns.RcodeServerFailure)(s, w, r)
}

// A server whose failures change their reason every round is still one failing condition: one
// line, not one per round; Status has the latest reason.
func TestFlappingFailureLogsOnce(t *testing.T) {
	srv := startDNS(t)
	srv.setSRV("_mysql._tcp.proxies.test", record{"localhost", 2883, 1})
	l := &logs{}
	src := newSource(t, srv, l, "_mysql._tcp.proxies.test")
	if _, err := src.Start(context.Background(), func(nodes.Set) { t.Error("update called") }); err != nil {
		t.Fatal(err)
	}
	srv.setFault(flapping)
	waitFor(t, 10*time.Second, "twenty failed rounds", func() bool { return src.Status().Failures >= 20 })
	if n := l.Count("DNS lookup failed"); n != 1 {
		t.Fatalf("%d failure lines over %d failed rounds, want 1:\n%s", n, src.Status().Failures, l.All())
	}
}

// The largest answers a DNS message holds (64 KiB over TCP, after a truncated one over UDP:
// some two thousand SRV records) make a list like any other; what they cost is bounded by that size.
func TestLargestAnswer(t *testing.T) {
	const n = 2200 // 29 bytes a record (an SRV target is never compressed): 63 KiB
	srv := startDNS(t)
	srv.setSRV("_mysql._tcp.proxies.test", record{"localhost", 2883, 1})
	srv.setFault(func(s *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool {
		if !isTCP(w) {
			return truncated(s, w, r)
		}
		m := new(mdns.Msg)
		m.SetReply(r)
		m.Compress = true
		for i := range n {
			m.Answer = append(m.Answer, &mdns.SRV{Hdr: header(r.Question[0].Name, mdns.TypeSRV), Port: uint16(1 + i), Target: "localhost."})
		}
		if err := w.WriteMsg(m); err != nil {
			t.Errorf("the large answer: %v", err)
		}
		return true
	})
	src := newSource(t, srv, &logs{}, "_mysql._tcp.proxies.test")
	set, err := src.Start(context.Background(), func(nodes.Set) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Nodes) != n {
		t.Fatalf("%d nodes, want %d", len(set.Nodes), n)
	}
}
