package configserver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// The /monitor answer: the Java server's fields, plus a few marked "lbd" below that Java tools
// ignore.
type monitorBody struct {
	Info        []monitorInfo   `json:"info"`
	SchemaInfo  []monitorSchema `json:"schemaInfo"`
	ProxyDetail []monitorProxy  `json:"proxyDetail"`
}

type monitorInfo struct {
	ConfigType       string `json:"configType"`
	SchemaSize       int    `json:"schemaSize"`       // every schema served, shown or not
	Online           int    `json:"online"`           // lbd: 1 while /health/status answers 200
	HiddenSchemaSize int    `json:"hiddenSchemaSize"` // lbd: protected schemas left out of this answer
}

type monitorSchema struct {
	Schema      string         `json:"schema"`
	AuthEnable  int            `json:"authEnable"`
	APIKeySize  int            `json:"apiKeySize"`
	ProxySize   int            `json:"proxySize"`
	MD5         string         `json:"md5"`                   // lbd: md5 of the full list
	ProxyPolicy string         `json:"proxyPolicy"`           // lbd
	AZProxySize map[string]int `json:"azProxySize,omitempty"` // lbd: proxies per AZ
}

type monitorProxy struct {
	Schema    string `json:"schema"`
	Proxy     string `json:"proxy"`
	Reachable int    `json:"reachable"`           // 1 when the last TCP probe connected
	AZ        string `json:"az,omitempty"`        // lbd: set for az.proxy entries
	LastProbe string `json:"lastProbe,omitempty"` // lbd: RFC 3339 time of the last probe; absent before the first
	Error     string `json:"error,omitempty"`     // lbd: why the last probe failed
}

// monitor answers /monitor from the served documents and the background probe's last results;
// it never connects to a proxy itself. Unless the request carried the admin token
// (authenticated), protected schemas are left out, with their proxies, and only counted.
func (s *Server) monitor(w http.ResponseWriter, authenticated bool) {
	st := s.state.Load()
	online := 0
	if s.online.Load() {
		online = 1
	}
	body := monitorBody{
		Info:        []monitorInfo{{ConfigType: s.backend.Kind(), SchemaSize: len(st.schemas), Online: online}},
		SchemaInfo:  []monitorSchema{},
		ProxyDetail: []monitorProxy{},
	}
	names := make([]string, 0, len(st.schemas))
	for name := range st.schemas {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ss := st.schemas[name]
		if !authenticated && ss.protected() {
			body.Info[0].HiddenSchemaSize++
			continue
		}
		ms := monitorSchema{
			Schema:      name,
			AuthEnable:  boolInt(ss.doc.AuthEnable),
			APIKeySize:  len(ss.doc.APIKeys),
			ProxySize:   len(ss.full.list),
			MD5:         ss.full.md5,
			ProxyPolicy: policyOf(ss.doc),
		}
		for _, a := range ss.full.list {
			body.ProxyDetail = append(body.ProxyDetail, s.proxyDetail(name, a, ""))
		}
		azs := make([]string, 0, len(ss.byAZ))
		for az := range ss.byAZ {
			azs = append(azs, az)
		}
		slices.Sort(azs)
		for _, az := range azs {
			if ms.AZProxySize == nil {
				ms.AZProxySize = map[string]int{}
			}
			ms.AZProxySize[az] = len(ss.byAZ[az].list)
			for _, a := range ss.byAZ[az].list {
				body.ProxyDetail = append(body.ProxyDetail, s.proxyDetail(name, a, az))
			}
		}
		body.SchemaInfo = append(body.SchemaInfo, ms)
	}
	slices.SortStableFunc(body.ProxyDetail, func(a, b monitorProxy) int {
		return cmp.Or(cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.AZ, b.AZ), cmp.Compare(a.Proxy, b.Proxy))
	})
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body) // plain values always encode
	writeJSON(w, http.StatusOK, bytes.TrimRight(b.Bytes(), "\n"))
}

func (s *Server) proxyDetail(schema, addr, az string) monitorProxy {
	mp := monitorProxy{Schema: schema, Proxy: addr, AZ: az}
	if s.prober == nil {
		return mp
	}
	if r, ok := s.prober.result(addr); ok {
		mp.Reachable = boolInt(r.reachable)
		mp.LastProbe = r.at.UTC().Format(time.RFC3339)
		mp.Error = r.err
	}
	return mp
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
