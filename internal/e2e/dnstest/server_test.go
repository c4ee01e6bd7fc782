package dnstest

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// dnsServer is an authoritative DNS server on a loopback port, over UDP and TCP, whose records
// the test changes while sources ask it.
type dnsServer struct {
	addr    string
	udp     *mdns.Server
	tcp     *mdns.Server
	queries atomic.Int64
	fault   atomic.Pointer[fault] // how the server misbehaves; nil while it answers from its records
	done    chan struct{}         // closed by close, ending the waits of faults

	mu    sync.Mutex
	names map[string]map[uint16][]mdns.RR // FQDN, lower case → type → records
}

// startDNS starts a server that stops at the end of the test.
func startDNS(t testing.TB) *dnsServer {
	t.Helper()
	s, err := runDNS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// runDNS starts a server on one port for both UDP and TCP.
func runDNS() (*dnsServer, error) {
	s := &dnsServer{names: map[string]map[uint16][]mdns.RR{}, done: make(chan struct{})}
	var pc net.PacketConn
	var ln net.Listener
	for attempt := 0; ; attempt++ {
		var err error
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
		if attempt == 10 {
			return nil, err
		}
	}
	s.addr = pc.LocalAddr().String()
	s.udp = &mdns.Server{PacketConn: pc, Handler: s}
	s.tcp = &mdns.Server{Listener: ln, Handler: s}
	for _, srv := range []*mdns.Server{s.udp, s.tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		failed := make(chan error, 1)
		go func() { failed <- srv.ActivateAndServe() }()
		select {
		case <-started:
		case err := <-failed:
			s.close()
			return nil, err
		case <-time.After(5 * time.Second):
			s.close()
			return nil, errors.New("the DNS server did not start")
		}
	}
	return s, nil
}

func (s *dnsServer) close() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.udp.Shutdown()
	s.tcp.Shutdown()
}

// ServeDNS answers from the records, unless a fault is set: then the fault answers.
func (s *dnsServer) ServeDNS(w mdns.ResponseWriter, r *mdns.Msg) {
	s.queries.Add(1)
	if f := s.fault.Load(); f != nil && (*f)(s, w, r) {
		return
	}
	s.answer(w, r)
}

// fault is a way of misbehaving: it answers r itself and returns true, or returns false to let
// the server answer from its records.
type fault func(s *dnsServer, w mdns.ResponseWriter, r *mdns.Msg) bool

// setFault makes the server misbehave as f does from now on; nil makes it answer again.
func (s *dnsServer) setFault(f fault) {
	if f == nil {
		s.fault.Store(nil)
		return
	}
	s.fault.Store(&f)
}

// answer answers from the records: NXDOMAIN for an unknown name, an empty answer for a known
// name without records of the type asked.
func (s *dnsServer) answer(w mdns.ResponseWriter, r *mdns.Msg) {
	m := new(mdns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) == 1 {
		q := r.Question[0]
		s.mu.Lock()
		types, known := s.names[strings.ToLower(q.Name)]
		if !known {
			m.Rcode = mdns.RcodeNameError
		} else {
			m.Answer = append(m.Answer, types[q.Qtype]...)
		}
		s.mu.Unlock()
	}
	w.WriteMsg(m)
}

func header(name string, typ uint16) mdns.RR_Header {
	return mdns.RR_Header{Name: mdns.Fqdn(name), Rrtype: typ, Class: mdns.ClassINET, Ttl: 1}
}

// setIPs makes name resolve to ips (A and AAAA records), replacing its records.
func (s *dnsServer) setIPs(name string, ips ...string) {
	types := map[uint16][]mdns.RR{}
	for _, ip := range ips {
		a := netip.MustParseAddr(ip)
		if a.Is4() {
			types[mdns.TypeA] = append(types[mdns.TypeA], &mdns.A{Hdr: header(name, mdns.TypeA), A: a.AsSlice()})
		} else {
			types[mdns.TypeAAAA] = append(types[mdns.TypeAAAA], &mdns.AAAA{Hdr: header(name, mdns.TypeAAAA), AAAA: a.AsSlice()})
		}
	}
	s.set(name, types)
}

// record is one SRV record.
type record struct {
	target string
	port   uint16
	weight uint16
}

// setSRV gives name these SRV records, replacing its records.
func (s *dnsServer) setSRV(name string, recs ...record) {
	var rrs []mdns.RR
	for _, r := range recs {
		rrs = append(rrs, &mdns.SRV{Hdr: header(name, mdns.TypeSRV), Priority: 10, Weight: r.weight, Port: r.port, Target: mdns.Fqdn(r.target)})
	}
	s.set(name, map[uint16][]mdns.RR{mdns.TypeSRV: rrs})
}

// setEmpty keeps name known but without records: its lookups get an empty answer.
func (s *dnsServer) setEmpty(name string) { s.set(name, map[uint16][]mdns.RR{}) }

// remove forgets name: its lookups get NXDOMAIN.
func (s *dnsServer) remove(name string) {
	s.mu.Lock()
	delete(s.names, strings.ToLower(mdns.Fqdn(name)))
	s.mu.Unlock()
}

func (s *dnsServer) set(name string, types map[uint16][]mdns.RR) {
	s.mu.Lock()
	s.names[strings.ToLower(mdns.Fqdn(name))] = types
	s.mu.Unlock()
}
