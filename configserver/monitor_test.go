package configserver

import (
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lbd-go/lbd/nodes"
)

// countingListener accepts and closes connections on loopback, counting them.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func listen(t *testing.T) *countingListener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: l}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cl.accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close(); <-done })
	return cl
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

type monitorAnswer struct {
	Info []struct {
		ConfigType       string `json:"configType"`
		SchemaSize       int    `json:"schemaSize"`
		Online           int    `json:"online"`
		HiddenSchemaSize int    `json:"hiddenSchemaSize"`
	} `json:"info"`
	SchemaInfo []struct {
		Schema     string `json:"schema"`
		AuthEnable int    `json:"authEnable"`
		APIKeySize int    `json:"apiKeySize"`
		ProxySize  int    `json:"proxySize"`
		MD5        string `json:"md5"`
	} `json:"schemaInfo"`
	ProxyDetail []struct {
		Schema    string `json:"schema"`
		Proxy     string `json:"proxy"`
		Reachable int    `json:"reachable"`
		AZ        string `json:"az"`
		LastProbe string `json:"lastProbe"`
	} `json:"proxyDetail"`
}

// getMonitor asks s's admin handler for /monitor from loopback, with the given headers.
func getMonitor(t *testing.T, s *Server, header ...string) monitorAnswer {
	t.Helper()
	rec := serve(s.AdminHandler(), http.MethodGet, "/monitor", "127.0.0.1:1", header...)
	var m monitorAnswer
	if rec.Code != 200 {
		t.Fatalf("/monitor: %d %s", rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("/monitor %s: %v", rec.Body, err)
	}
	return m
}

func TestMonitorUsesBackgroundProbe(t *testing.T) {
	live := listen(t)
	dead := closedAddr(t)
	mem := mustMemory(t,
		&nodes.Document{Schema: "a", AuthEnable: true, APIKeys: []string{"k1", "k2"}, Proxy: []string{live.Addr().String(), dead}},
		&nodes.Document{Schema: "b", Proxy: []string{live.Addr().String()},
			AZProxy: map[string][]string{"az1": {live.Addr().String()}}, ProxyPolicy: nodes.PolicyAZ},
	)
	s, _, logs := startServer(t, mem, func(c *Config) {
		c.AdminToken = testAdminToken // schema a is protected: shown only with the token
		c.ProbeInterval = time.Hour   // only the first round and rounds for new proxies
		c.ProbeTimeout = 500 * time.Millisecond
		c.ProbeConcurrency = 2
	})
	var m monitorAnswer
	eventually(t, 5*time.Second, "first probe round", func() bool {
		m = getMonitor(t, s, adminAuth...)
		for _, p := range m.ProxyDetail {
			if p.LastProbe == "" {
				return false
			}
		}
		return len(m.ProxyDetail) == 4
	})
	if m.Info[0].ConfigType != "memory" || m.Info[0].SchemaSize != 2 || m.Info[0].Online != 1 {
		t.Errorf("info %+v", m.Info)
	}
	if a := m.SchemaInfo[0]; a.Schema != "a" || a.AuthEnable != 1 || a.APIKeySize != 2 || a.ProxySize != 2 || len(a.MD5) != 32 {
		t.Errorf("schemaInfo[0] %+v", a)
	}
	for _, p := range m.ProxyDetail {
		want := 1
		if p.Proxy == dead {
			want = 0
		}
		if p.Reachable != want {
			t.Errorf("proxy %+v: reachable %d, want %d", p, p.Reachable, want)
		}
	}
	if len(logs.lines("proxy unreachable", dead)) != 1 {
		t.Errorf("want one warning for %s:\n%s", dead, logs)
	}

	// /monitor does not connect to proxies itself.
	eventually(t, 5*time.Second, "the probe's connection accepted", func() bool { return live.accepted.Load() == 1 })
	before := live.accepted.Load()
	for range 5 {
		getMonitor(t, s, adminAuth...)
	}
	if after := live.accepted.Load(); after != before {
		t.Errorf("/monitor made %d connections", after-before)
	}

	// A proxy added by a change is probed without waiting for the next round.
	live2 := listen(t)
	if err := mem.Put(&nodes.Document{Schema: "c", Proxy: []string{live2.Addr().String()}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "new proxy probed", func() bool {
		for _, p := range getMonitor(t, s, adminAuth...).ProxyDetail {
			if p.Schema == "c" && p.Reachable == 1 {
				return true
			}
		}
		return false
	})
	if live.accepted.Load() != before {
		t.Error("a change re-probed proxies that already had a result")
	}
}

func TestMonitorWithoutProbe(t *testing.T) {
	mem := mustMemory(t, &nodes.Document{Schema: "a", Proxy: []string{"127.0.0.1:1"}})
	s, _, _ := startServer(t, mem, nil) // probing off
	m := getMonitor(t, s)
	if len(m.ProxyDetail) != 1 || m.ProxyDetail[0].Reachable != 0 || m.ProxyDetail[0].LastProbe != "" {
		t.Fatalf("%+v", m)
	}
}
