package remote

import (
	"context"
	"errors"
	"fmt"
	"github.com/lbd-go/lbd/internal/remotefake"
	"maps"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

func TestParseServer(t *testing.T) {
	for _, tc := range []struct {
		in, base string
		scheme   bool // parse as Config.Servers does (schemes allowed)
		bad      bool
	}{
		{in: "cs1.example:8080", base: "http://cs1.example:8080"},
		{in: " cs1.example:8080 ", base: "http://cs1.example:8080"},
		{in: "cs1.example:443", base: "https://cs1.example:443"},
		{in: "cs1.example", base: "http://cs1.example:80"},
		{in: "10.0.0.1", base: "http://10.0.0.1:80"},
		{in: "[fd00::1]:8080", base: "http://[fd00::1]:8080"},
		{in: "[fd00::1]", base: "http://[fd00::1]:80"},
		{in: "[fd00::1]:443", base: "https://[fd00::1]:443"},
		{in: "https://cs1.example", scheme: true, base: "https://cs1.example:443"},
		{in: "https://cs1.example:8443/", scheme: true, base: "https://cs1.example:8443"},
		{in: "http://cs1.example:443", scheme: true, base: "http://cs1.example:443"},
		{in: "http://cs1.example", bad: true}, // no scheme in a DSN
		{in: "", bad: true},
		{in: "fd00::1", bad: true},
		{in: "cs1:0", bad: true},
		{in: "cs1:65536", bad: true},
		{in: "cs1:http", bad: true},
		{in: "cs1:", bad: true},
		{in: ":8080", bad: true},
		{in: "cs1:8080/path", scheme: true, bad: true},
		{in: "user@cs1:8080", bad: true},
	} {
		got, err := parseServer(tc.in, tc.scheme)
		if tc.bad {
			if err == nil {
				t.Errorf("parseServer(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.base != tc.base {
			t.Errorf("parseServer(%q) = %q, %v; want %q", tc.in, got.base, err, tc.base)
		}
	}
}

// longAnswer is a config-server answer listing n distinct proxies.
func longAnswer(n int) string {
	var b strings.Builder
	b.WriteString(`{"code":200,"data":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"10.%d.%d.%d:2883"`, i>>16, i>>8&255, i&255)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestDecodeAnswerAtMaxNodes: a list of exactly nodes.MaxNodes proxies is taken; one more is
// refused (TestDecodeAnswer), saying the bound.
func TestDecodeAnswerAtMaxNodes(t *testing.T) {
	got, err := decodeAnswer(server{name: "cs1:8080"}, 200, []byte(longAnswer(nodes.MaxNodes)), false)
	if err != nil || len(got.list) != nodes.MaxNodes {
		t.Fatalf("answer of %d proxies: %d taken, %v", nodes.MaxNodes, len(got.list), err)
	}
	_, err = decodeAnswer(server{name: "cs1:8080"}, 200, []byte(longAnswer(nodes.MaxNodes+1)), false)
	if !errors.Is(err, nodes.ErrTooManyNodes) || !strings.Contains(err.Error(), "50000") {
		t.Fatalf("answer of %d proxies: %v, want an error wrapping nodes.ErrTooManyNodes that says the bound", nodes.MaxNodes+1, err)
	}
}

func TestDecodeAnswer(t *testing.T) {
	srv := server{name: "cs1:8080"}
	list := []string{"10.0.0.1:2883", "10.0.0.2:2883"}
	sum := nodes.ListMD5(list)
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		sentMD5 bool
		kind    error
		want    answer
	}{
		{name: "list", status: 200, body: `{"code":200,"md5":"` + sum + `","data":["10.0.0.1:2883","10.0.0.2:2883"]}`,
			want: answer{md5: sum, list: list}},
		{name: "no md5 is computed", status: 200, body: `{"code":200,"data":["10.0.0.1:2883"," 10.0.0.2:2883 "]}`,
			want: answer{md5: sum, list: list}},
		{name: "unknown fields", status: 200, body: `{"code":200,"md5":"` + sum + `","data":["10.0.0.1:2883"],"az":"az1","extra":{}}`,
			want: answer{md5: sum, list: []string{"10.0.0.1:2883"}}},
		{name: "zones", status: 200, body: `{"code":200,"md5":"` + sum + `","data":["10.0.0.1:2883"],"zone":{"10.0.0.1:2883":"az1"}}`,
			want: answer{md5: sum, list: []string{"10.0.0.1:2883"}, zones: map[string]string{"10.0.0.1:2883": "az1"}}},
		{name: "zone with a space", status: 200, body: `{"code":200,"md5":"` + sum + `","data":["10.0.0.1:2883"],"zone":{"10.0.0.1:2883":"az 1"}}`, kind: ErrMalformedEntry},
		{name: "zone of an unlisted node", status: 200, body: `{"code":200,"md5":"` + sum + `","data":["10.0.0.1:2883"],"zone":{"10.0.0.2:2883":"az1"}}`, kind: ErrMalformedEntry},
		{name: "304", status: 200, body: `{"code":304}`, sentMD5: true, want: answer{unchanged: true}},
		{name: "304 without md5", status: 200, body: `{"code":304}`, kind: ErrBadAnswer},
		{name: "404", status: 200, body: `{"code":404}`, kind: ErrUnknownSchema},
		{name: "http 403", status: 403, body: `{"code":403,"msg":"illegal api key","data":null}`, kind: ErrForbidden},
		{name: "http 403 no body", status: 403, kind: ErrForbidden},
		{name: "code 403", status: 200, body: `{"code":403}`, kind: ErrForbidden},
		{name: "http 500", status: 500, body: `{"code":500}`, kind: ErrBadAnswer},
		{name: "http 404", status: 404, body: `not found`, kind: ErrBadAnswer},
		{name: "code 500", status: 200, body: `{"code":500}`, kind: ErrBadAnswer},
		{name: "no code", status: 200, body: `{"data":["10.0.0.1:2883"]}`, kind: ErrBadAnswer},
		{name: "not json", status: 200, body: `<html>`, kind: ErrBadAnswer},
		{name: "trailing", status: 200, body: `{"code":304} x`, sentMD5: true, kind: ErrBadAnswer},
		{name: "empty", status: 200, body: `{"code":200,"md5":"x","data":[]}`, kind: ErrEmptyList},
		{name: "null data", status: 200, body: `{"code":200,"md5":"x","data":null}`, kind: ErrEmptyList},
		{name: "no port", status: 200, body: `{"code":200,"md5":"x","data":["10.0.0.1:2883","10.0.0.2"]}`, kind: ErrMalformedEntry},
		{name: "bad port", status: 200, body: `{"code":200,"md5":"x","data":["10.0.0.1:0"]}`, kind: ErrMalformedEntry},
		{name: "number", status: 200, body: `{"code":200,"md5":"x","data":[2883]}`, kind: ErrMalformedEntry},
		{name: "too long", status: 200, body: longAnswer(nodes.MaxNodes + 1), kind: ErrTooLong},
		{name: "duplicate", status: 200, body: `{"code":200,"md5":"x","data":["10.0.0.1:2883","10.0.0.1:2883"]}`, kind: ErrMalformedEntry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeAnswer(srv, tc.status, []byte(tc.body), tc.sentMD5)
			if tc.kind != nil {
				if err == nil || !errors.Is(err, tc.kind) {
					t.Fatalf("got %+v, %v; want %v", got, err, tc.kind)
				}
				if !strings.HasPrefix(err.Error(), "cs1:8080: ") {
					t.Errorf("error %q does not start with the server", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.unchanged != tc.want.unchanged || got.md5 != tc.want.md5 || !slices.Equal(got.list, tc.want.list) || !maps.Equal(got.zones, tc.want.zones) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The first request has no md5; every later one carries the md5 of the list the client has,
// so an unchanged list costs a 304 and a change is applied at the next poll.
func TestPollsCarryTheMD5(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetKey("k-123")
	first := []string{"10.0.0.1:2883", "10.0.0.2:2883"}
	cs.SetList("im_user", first...)
	src, u, set := startSource(t, Config{
		Servers: []string{cs.Addr()}, Schema: "im_user", APIKey: "k-123",
		PollInterval: 10 * time.Millisecond, DisableCache: true,
	}, nil)
	if !slices.Equal(set.Addrs(), first) || set.Version != nodes.ListMD5(first) {
		t.Fatalf("Start = %v version %q", set.Addrs(), set.Version)
	}
	waitFor(t, 5*time.Second, "four polls", func() bool { return cs.Count() >= 5 })
	if u.Len() != 0 {
		t.Fatalf("an unchanged list was pushed: %v", u.Last())
	}
	second := []string{"10.0.0.1:2883", "10.0.0.3:2883"}
	cs.SetList("im_user", second...)
	waitFor(t, 5*time.Second, "the changed list", func() bool { return u.Len() == 1 })
	if got := u.Last(); !slices.Equal(got.Addrs(), second) || got.Version != nodes.ListMD5(second) {
		t.Fatalf("pushed %v version %q", got.Addrs(), got.Version)
	}
	n := cs.Count()
	waitFor(t, 5*time.Second, "more polls", func() bool { return cs.Count() >= n+3 })
	src.Close()

	reqs := cs.Requests()
	if reqs[0].Query.Has("md5") {
		t.Errorf("the first request sent md5=%q", reqs[0].Query.Get("md5"))
	}
	sawSecond := false
	for i, r := range reqs {
		q := r.Query
		if q.Get("schema") != "im_user" || q.Get("clientFeatureLevel") != "2" || !strings.HasPrefix(q.Get("clientVersion"), "lbd-go/") {
			t.Errorf("request %d: query %v", i, q)
		}
		if q.Has("policy") || q.Has("az") {
			t.Errorf("request %d: unexpected policy or az: %v", i, q)
		}
		if q.Get("ip") != "127.0.0.1" {
			t.Errorf("request %d: ip=%q, want the local address 127.0.0.1", i, q.Get("ip"))
		}
		if r.Auth != "Bearer k-123" || r.Accept != "application/json" {
			t.Errorf("request %d: Authorization %q, Accept %q", i, r.Auth, r.Accept)
		}
		if i == 0 {
			continue
		}
		switch q.Get("md5") {
		case nodes.ListMD5(first):
			if sawSecond {
				t.Errorf("request %d went back to the old md5", i)
			}
		case nodes.ListMD5(second):
			sawSecond = true
		default:
			t.Errorf("request %d: md5=%q, want the current list's", i, q.Get("md5"))
		}
	}
	if !sawSecond {
		t.Error("no request carried the new md5")
	}
}

func TestUsableIP(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 5}, "10.1.2.3"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 5}, "10.1.2.3"},
		{&net.TCPAddr{IP: net.ParseIP("fd00::5"), Port: 5, Zone: "eth0"}, "fd00::5"},
		{&net.TCPAddr{IP: net.IPv4zero}, ""},
		{&net.TCPAddr{}, ""},
		{&net.UnixAddr{Name: "lbd-test.sock", Net: "unix"}, ""},
		{nil, ""},
	} {
		got, err := usableIP(tc.addr)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("usableIP(%v) = %q, %v; want %q", tc.addr, got, err, tc.want)
		}
	}
}

func TestReportedIPAndAZ(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	last := func(t *testing.T, cfg Config) (ip, az string, hasIP, hasAZ bool) {
		t.Helper()
		src, _, _ := startSource(t, cfg, nil)
		src.Close()
		q := cs.Requests()[cs.Count()-1].Query
		return q.Get("ip"), q.Get("az"), q.Has("ip"), q.Has("az")
	}
	base := Config{Servers: []string{cs.Addr()}, Schema: "s", DisableCache: true}

	t.Run("found", func(t *testing.T) {
		if ip, _, _, hasAZ := last(t, base); ip != "127.0.0.1" || hasAZ {
			t.Fatalf("ip=%q hasAZ=%v, want 127.0.0.1 and no az", ip, hasAZ)
		}
	})
	t.Run("configured", func(t *testing.T) {
		cfg := base
		cfg.IP, cfg.AZ = "10.9.9.9", "az2"
		if ip, az, _, _ := last(t, cfg); ip != "10.9.9.9" || az != "az2" {
			t.Fatalf("ip=%q az=%q", ip, az)
		}
	})
	t.Run("env overrides", func(t *testing.T) {
		t.Setenv(EnvIP, "10.1.1.1")
		t.Setenv(EnvAZ, "az7")
		cfg := base
		cfg.IP, cfg.AZ = "10.9.9.9", "az2"
		if ip, az, _, _ := last(t, cfg); ip != "10.1.1.1" || az != "az7" {
			t.Fatalf("ip=%q az=%q", ip, az)
		}
	})
	t.Run("empty env clears", func(t *testing.T) {
		t.Setenv(EnvIP, "")
		t.Setenv(EnvAZ, "")
		cfg := base
		cfg.IP, cfg.AZ = "10.9.9.9", "az2"
		if ip, _, _, hasAZ := last(t, cfg); ip != "127.0.0.1" || hasAZ {
			t.Fatalf("ip=%q hasAZ=%v, want the found address and no az", ip, hasAZ)
		}
	})
	t.Run("bad env ip", func(t *testing.T) {
		t.Setenv(EnvIP, "not-an-ip")
		if _, err := New(base); err == nil || !strings.Contains(err.Error(), EnvIP) {
			t.Fatalf("New = %v, want an error naming %s", err, EnvIP)
		}
	})
}

// When the local address cannot be found the request goes without ip, and the source tries
// again only after the back-off, not at every poll.
func TestLocalAddressBackoff(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	logs := &logRecorder{}
	src, err := New(Config{
		Servers: []string{cs.Addr()}, Schema: "s", DisableCache: true,
		PollInterval: 5 * time.Millisecond, AZRefreshInterval: time.Hour, Logger: logs.logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var tries atomic.Int64
	src.cl.localAddr = func(context.Context, string) (net.Addr, error) {
		tries.Add(1)
		return &net.TCPAddr{IP: net.IPv4zero}, nil
	}
	if _, err := src.Start(context.Background(), func(nodes.Set) {}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "ten polls", func() bool { return cs.Count() >= 10 })
	src.Close()
	if n := tries.Load(); n != 1 {
		t.Errorf("looked for the local address %d times within the back-off, want 1", n)
	}
	for i, r := range cs.Requests() {
		if r.Query.Has("ip") {
			t.Fatalf("request %d sent ip=%q", i, r.Query.Get("ip"))
		}
	}
	if n := logs.count("cannot tell the local address"); n != 1 {
		logs.dump(t)
		t.Errorf("%d warnings about the local address, want 1", n)
	}
}

// A server that cannot be connected to fails the request at the address lookup; the next
// server is asked, with the address found through it.
func TestLocalAddressFromTheNextServer(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	src, _, _ := startSource(t, Config{Servers: []string{remotefake.DeadAddr(t), cs.Addr()}, Schema: "s", DisableCache: true}, nil)
	src.Close()
	if q := cs.Requests()[0].Query; q.Get("ip") != "127.0.0.1" {
		t.Fatalf("ip=%q", q.Get("ip"))
	}
}

func TestForbiddenAnswer(t *testing.T) {
	cs := remotefake.New(t)
	cs.SetList("s", "10.0.0.1:1")
	cs.SetKey("right")
	src, err := New(Config{Servers: []string{cs.Addr()}, Schema: "s", APIKey: "wrong-key-xyz", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.Start(context.Background(), func(nodes.Set) {})
	if !errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), "illegal api key") {
		t.Fatalf("Start = %v, want ErrForbidden with the server's message", err)
	}
	if strings.Contains(err.Error(), "wrong-key-xyz") {
		t.Fatalf("the error shows the API key: %v", err)
	}
	if got := cs.Requests()[0].Auth; got != "Bearer wrong-key-xyz" {
		t.Fatalf("Authorization %q", got)
	}
	var se *ServerError
	if !errors.As(err, &se) || se.Server != cs.Addr() {
		t.Fatalf("no *ServerError naming the server in %v", err)
	}
}

// An "https://" server in Config.Servers is spoken to over TLS, with Config.TLS.
func TestHTTPS(t *testing.T) {
	cs := remotefake.NewTLS(t)
	cs.SetList("s", "10.0.0.1:1")
	tlsCfg := cs.TLSConfig()
	_, _, set := startSource(t, Config{Servers: []string{cs.URL()}, Schema: "s", DisableCache: true, TLS: tlsCfg}, nil)
	if got := set.Addrs(); len(got) != 1 || got[0] != "10.0.0.1:1" {
		t.Fatalf("got %v", got)
	}
	src, err := New(Config{Servers: []string{cs.URL()}, Schema: "s", DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Start(context.Background(), func(nodes.Set) {}); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("without the test CA: %v, want ErrUnreachable", err)
	}
}
