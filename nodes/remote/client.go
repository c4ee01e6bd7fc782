package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/lbd-go/lbd/nodes"
)

// fetchPath is lb-driver's one endpoint for drivers.
const fetchPath = "/fetch_sql_proxy_list"

// policyDefault asks for the default (whole) set whatever the client's AZ.
const policyDefault = nodes.PolicyDefault

// Bounds on what a config-server sends. A proxy list of 1 MiB holds tens of thousands of
// entries; anything larger is not a config-server answering lb-driver's protocol.
const (
	maxAnswer       = 1 << 20  // body bytes read
	maxAnswerHeader = 64 << 10 // response header bytes (http.Transport.MaxResponseHeaderBytes)
)

// client speaks the config-server protocol. Its methods are called from one goroutine at a
// time (Start, then the refresh goroutine), so its state needs no lock.
type client struct {
	schema  string
	apiKey  string
	az      string
	ip      string // configured; "" means the local address is found and sent
	timeout time.Duration
	backoff time.Duration // before trying again to find the local address
	clk     nodes.Clock
	http    *http.Client
	tr      *http.Transport
	notes   *notes

	// The local address, found once from a connection to a config-server.
	learnedIP string
	nextLearn time.Time
	// localAddr connects to hostPort and returns the connection's local address; a test
	// replaces it.
	localAddr func(ctx context.Context, hostPort string) (net.Addr, error)
}

func newClient(s settings, n *notes) *client {
	dialer := &net.Dialer{Timeout: s.Timeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                  nil, // the config-server must see the client's own address
		DialContext:            dialer.DialContext,
		TLSClientConfig:        s.TLS,
		TLSHandshakeTimeout:    s.Timeout,
		ResponseHeaderTimeout:  s.Timeout,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        max(3*s.PollInterval, 30*time.Second),
		MaxResponseHeaderBytes: maxAnswerHeader,
	}
	c := &client{
		schema:  s.Schema,
		apiKey:  s.APIKey,
		az:      s.AZ,
		ip:      s.IP,
		timeout: s.Timeout,
		backoff: s.AZRefreshInterval,
		clk:     s.Clock,
		http:    &http.Client{Transport: tr, CheckRedirect: noRedirect},
		tr:      tr,
		notes:   n,
	}
	c.localAddr = func(ctx context.Context, hostPort string) (net.Addr, error) {
		conn, err := dialer.DialContext(ctx, "tcp", hostPort)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.LocalAddr(), nil
	}
	return c
}

// noRedirect stops the client at a redirect: the 3xx answer itself reaches decodeAnswer,
// which refuses it. A config-server answer never sends lbd elsewhere (the API key would go
// with it, and another server's list would be applied).
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// close drops the idle keep-alive connections (and their goroutines).
func (c *client) close() { c.tr.CloseIdleConnections() }

// query is what varies between two requests.
type query struct {
	md5    string // the md5 of the list the client has for this variant; "" for none
	policy string // "" (the config-server decides) or policyDefault
}

// answer is a config-server's usable answer.
type answer struct {
	unchanged bool                  // code 304: the client's md5 is current
	md5       string                // code 200: the list's version
	list      []string              // code 200: the list, validated, in the server's order
	weights   map[string]int        // code 200: canonical address → weight, for the listed nodes that have one; nil when none
	roles     map[string]nodes.Role // code 200: canonical address → role, for the listed nodes that have one; nil when none
	zones     map[string]string     // code 200: canonical address → zone, for the listed nodes that have one; nil when none
	groups    map[string]string     // code 200: canonical address → groups (nodes.Node.Groups), for the listed nodes in any; nil when none
}

// wireAnswer is the JSON body; lb-driver's config-server writes code, md5 and data, and
// clients skip fields they do not know.
type wireAnswer struct {
	Code *int              `json:"code"`
	MD5  string            `json:"md5"`
	Data []json.RawMessage `json:"data"`
	Msg  string            `json:"msg"`
	// Weight is lbd's config-server's: proxy address → weight (see nodes.Document.Weight).
	Weight map[string]json.RawMessage `json:"weight"`
	// Role is lbd's config-server's: proxy address → role name (see nodes.Document.Role).
	Role map[string]json.RawMessage `json:"role"`
	// Zone is lbd's config-server's: proxy address → the AZ whose az.proxy set lists it (see
	// nodes.Document.Nodes).
	Zone map[string]json.RawMessage `json:"zone"`
	// Group is lbd's config-server's: proxy address → the names of its groups (see
	// nodes.Document.Group).
	Group map[string]json.RawMessage `json:"group"`
}

// fetch asks one config-server for the schema's list. The request carries the md5 the client
// has (so an unchanged list costs a 304), the AZ when one is configured, the client's IP when
// known, clientFeatureLevel and clientVersion. The error is a *ServerError.
func (c *client) fetch(ctx context.Context, srv server, q query) (answer, *ServerError) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ip, serr := c.reportedIP(ctx, srv)
	if serr != nil {
		return answer{}, serr
	}
	v := url.Values{}
	v.Set("schema", c.schema)
	if q.md5 != "" {
		v.Set("md5", q.md5)
	}
	if c.az != "" {
		v.Set("az", c.az)
	}
	if ip != "" {
		v.Set("ip", ip)
	}
	v.Set("clientFeatureLevel", strconv.Itoa(ClientFeatureLevel))
	v.Set("clientVersion", clientVersion())
	if q.policy != "" {
		v.Set("policy", q.policy)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.base+fetchPath+"?"+v.Encode(), nil)
	if err != nil {
		return answer{}, newServerError(srv, ErrBadAnswer, "request", "cannot build the request: "+err.Error())
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", clientVersion())
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return answer{}, unreachable(srv, err, c.timeout.String())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return answer{}, unreachable(srv, err, c.timeout.String())
	}
	if len(body) > maxAnswer {
		return answer{}, newServerError(srv, ErrBadAnswer, "too large", fmt.Sprintf("the answer is larger than %d bytes", maxAnswer))
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return answer{}, redirected(srv, resp.StatusCode, resp.Header.Get("Location"))
	}
	return decodeAnswer(srv, resp.StatusCode, body, q.md5 != "")
}

// decodeAnswer turns an HTTP answer into a usable list, or says why it is not one. sentMD5
// tells whether a 304 makes sense.
func decodeAnswer(srv server, status int, body []byte, sentMD5 bool) (answer, *ServerError) {
	var w wireAnswer
	jsonErr := json.Unmarshal(body, &w)
	if status == http.StatusForbidden || (jsonErr == nil && status == http.StatusOK && w.Code != nil && *w.Code == http.StatusForbidden) {
		detail := ""
		if jsonErr == nil && w.Msg != "" {
			detail = "the config-server says: " + clip(w.Msg)
		}
		return answer{}, newServerError(srv, ErrForbidden, "", detail)
	}
	if status != http.StatusOK {
		return answer{}, badStatus(srv, status)
	}
	if jsonErr != nil {
		return answer{}, newServerError(srv, ErrBadAnswer, "json", "the body is not JSON: "+clip(jsonErr.Error()))
	}
	if w.Code == nil {
		return answer{}, newServerError(srv, ErrBadAnswer, "no code", "the JSON answer has no code")
	}
	switch *w.Code {
	case http.StatusNotModified:
		if !sentMD5 {
			return answer{}, newServerError(srv, ErrBadAnswer, "code 304", "code 304 (unchanged) to a request without md5")
		}
		return answer{unchanged: true}, nil
	case http.StatusNotFound:
		return answer{}, newServerError(srv, ErrUnknownSchema, "", "")
	case http.StatusOK:
	default:
		return answer{}, newServerError(srv, ErrBadAnswer, "code "+strconv.Itoa(*w.Code), fmt.Sprintf("answer code %d", *w.Code))
	}
	if len(w.Data) == 0 {
		return answer{}, newServerError(srv, ErrEmptyList, "", "")
	}
	if len(w.Data) > nodes.MaxNodes {
		return answer{}, newServerError(srv, ErrTooLong, "", fmt.Sprintf("%d entries, more than the %d a Connector takes (nodes.MaxNodes); "+
			"serve each application a part of the fleet (an AZ set, or a schema per part)", len(w.Data), nodes.MaxNodes))
	}
	spelled := make([]string, 0, len(w.Data)) // as the server wrote them, for ListMD5
	list := make([]string, 0, len(w.Data))
	seen := make(map[string]string, len(w.Data))
	for _, raw := range w.Data {
		var entry string
		if err := json.Unmarshal(raw, &entry); err != nil {
			return answer{}, newServerError(srv, ErrMalformedEntry, "", fmt.Sprintf("entry %s is not a string", clip(string(bytes.TrimSpace(raw)))))
		}
		entry = strings.TrimSpace(entry)
		canon, err := nodes.Canonical(entry)
		if err != nil {
			return answer{}, newServerError(srv, ErrMalformedEntry, "", clip(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
		if first, dup := seen[canon]; dup {
			detail := fmt.Sprintf("%q is listed twice", clip(entry))
			if first != entry {
				detail = fmt.Sprintf("%q is listed twice (also as %q, the same node)", clip(entry), clip(first))
			}
			return answer{}, newServerError(srv, ErrMalformedEntry, "", detail)
		}
		seen[canon] = entry
		spelled = append(spelled, entry)
		list = append(list, canon)
	}
	weights, err := decodeWeights(w.Weight, seen)
	if err != nil {
		return answer{}, newServerError(srv, ErrMalformedEntry, "weight", err.Error())
	}
	roles, err := decodeRoles(w.Role, seen)
	if err != nil {
		return answer{}, newServerError(srv, ErrMalformedEntry, "role", err.Error())
	}
	zones, err := decodeZones(w.Zone, seen)
	if err != nil {
		return answer{}, newServerError(srv, ErrMalformedEntry, "zone", err.Error())
	}
	groups, err := decodeGroups(w.Group, seen)
	if err != nil {
		return answer{}, newServerError(srv, ErrMalformedEntry, "group", err.Error())
	}
	md5 := strings.TrimSpace(w.MD5)
	if md5 == "" {
		md5 = nodes.ListMD5(spelled) // what lb-driver's config-server would have sent
	} else if err := checkMD5(md5); err != nil {
		return answer{}, newServerError(srv, ErrBadAnswer, "md5", err.Error())
	}
	return answer{md5: md5, list: list, weights: weights, roles: roles, zones: zones, groups: groups}, nil
}

// groupNames reports whether names are group names as a node may have them (nodes.CheckGroup,
// each once, at most nodes.MaxGroupsPerNode).
func groupNames(names []string) bool {
	for _, g := range names {
		if nodes.CheckGroup(g) != nil {
			return false
		}
	}
	return nodes.CheckGroups(strings.Join(names, string(nodes.GroupSep))) == nil
}

// decodeGroups checks an answer's group map against its list (seen: canonical address →
// spelling) and returns it keyed by canonical address, as nodes.Node.Groups spells them: every
// key a listed node, once, every value a list of group names nodes.CheckGroups accepts, and at
// most nodes.MaxGroupSets distinct sets over the list.
func decodeGroups(raw map[string]json.RawMessage, seen map[string]string) (map[string]string, error) {
	var out map[string]string
	for a, v := range raw {
		canon, err := nodes.Canonical(a)
		if err != nil {
			return nil, fmt.Errorf("groups for %q: %s", clip(a), clip(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
		if _, listed := seen[canon]; !listed {
			return nil, fmt.Errorf("groups for %q, which the answer does not list", clip(a))
		}
		var names []string
		if err := json.Unmarshal(v, &names); err != nil || len(names) == 0 || !groupNames(names) {
			return nil, fmt.Errorf("groups %s for %q are not a list of 1 to %d group names (lower-case letters, digits, '-' and '_')",
				clip(string(bytes.TrimSpace(v))), clip(a), nodes.MaxGroupsPerNode)
		}
		if _, dup := out[canon]; dup {
			return nil, fmt.Errorf("two group lists for %q", clip(a))
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[canon] = nodes.JoinGroups(names...)
	}
	if out != nil {
		list := make([]nodes.Node, 0, len(out))
		for a, g := range out {
			list = append(list, nodes.Node{Addr: a, Groups: g})
		}
		if err := nodes.CheckGroupSets(list); err != nil {
			return nil, errors.New(clip(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
	}
	return out, nil
}

// decodeZones checks an answer's zone map against its list (seen: canonical address → spelling)
// and returns it keyed by canonical address: every key a listed node, once, every value a zone
// name nodes.CheckZone accepts.
func decodeZones(raw map[string]json.RawMessage, seen map[string]string) (map[string]string, error) {
	var out map[string]string
	for a, v := range raw {
		canon, err := nodes.Canonical(a)
		if err != nil {
			return nil, fmt.Errorf("zone for %q: %s", clip(a), clip(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
		if _, listed := seen[canon]; !listed {
			return nil, fmt.Errorf("zone for %q, which the answer does not list", clip(a))
		}
		var z string
		if err := json.Unmarshal(v, &z); err != nil || nodes.CheckZone(z) != nil {
			return nil, fmt.Errorf("zone %s for %q is not a name of letters, digits, '-', '_' and '.'", clip(string(bytes.TrimSpace(v))), clip(a))
		}
		if _, dup := out[canon]; dup {
			return nil, fmt.Errorf("two zones for %q", clip(a))
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[canon] = z
	}
	return out, nil
}

// decodeWeights checks an answer's weight map against its list (seen: canonical address →
// spelling) and returns it keyed by canonical address, without the zero (default) weights.
func decodeWeights(raw map[string]json.RawMessage, seen map[string]string) (map[string]int, error) {
	var out map[string]int
	for a, v := range raw {
		canon, err := nodes.Canonical(a)
		if err != nil {
			return nil, fmt.Errorf("weight for %q: %s", clip(a), clip(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
		if _, listed := seen[canon]; !listed {
			return nil, fmt.Errorf("weight for %q, which the answer does not list", clip(a))
		}
		var w int
		if err := json.Unmarshal(v, &w); err != nil || nodes.CheckWeight(w) != nil {
			return nil, fmt.Errorf("weight %s for %q is not a whole number from 0 to %d", clip(string(bytes.TrimSpace(v))), clip(a), nodes.MaxWeight)
		}
		if _, dup := out[canon]; dup {
			return nil, fmt.Errorf("two weights for %q", clip(a))
		}
		if out == nil {
			out = make(map[string]int)
		}
		out[canon] = w
	}
	for a, w := range out {
		if w == 0 {
			delete(out, a)
		}
	}
	return out, nil
}

// decodeRoles checks an answer's role map against its list (seen: canonical address →
// spelling) and returns it keyed by canonical address: every key a listed node, once, every
// value "primary", "replica" or "standby".
func decodeRoles(raw map[string]json.RawMessage, seen map[string]string) (map[string]nodes.Role, error) {
	var out map[string]nodes.Role
	for a, v := range raw {
		canon, err := nodes.Canonical(a)
		if err != nil {
			return nil, fmt.Errorf("role for %q: %s", clip(a), clip(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
		if _, listed := seen[canon]; !listed {
			return nil, fmt.Errorf("role for %q, which the answer does not list", clip(a))
		}
		var name string
		r := nodes.RoleUnknown
		if json.Unmarshal(v, &name) == nil {
			r, _ = nodes.ParseRole(name)
		}
		if r == nodes.RoleUnknown {
			return nil, fmt.Errorf("role %s for %q is not \"primary\", \"replica\" or \"standby\"", clip(string(bytes.TrimSpace(v))), clip(a))
		}
		if _, dup := out[canon]; dup {
			return nil, fmt.Errorf("two roles for %q", clip(a))
		}
		if out == nil {
			out = make(map[string]nodes.Role)
		}
		out[canon] = r
	}
	return out, nil
}

// checkMD5 accepts a list version as lb-driver's config-server writes it: an MD5 in 32 hex
// digits (nodes.ListMD5). The client sends it back in every request, so anything else is
// refused before it can make a request that no server accepts.
func checkMD5(md5 string) error {
	if len(md5) != 32 || strings.Trim(md5, "0123456789abcdefABCDEF") != "" {
		return fmt.Errorf("the md5 %q is not 32 hex digits", clip(md5))
	}
	return nil
}

// redirected describes a 3xx answer, which lbd never follows.
func redirected(srv server, status int, location string) *ServerError {
	return newServerError(srv, ErrBadAnswer, "http "+strconv.Itoa(status),
		fmt.Sprintf("HTTP status %d: the config-server redirects to %s, and lbd follows no redirect: "+
			"list the config-server that answers in the DSN (or Config.Servers)", status, clip(location)))
}

// clip shortens text from a config-server for an error message and replaces its control
// characters, so that it can neither flood nor forge a log line.
func clip(s string) string {
	const n = 200
	cut := len(s) > n
	if cut {
		s = strings.ToValidUTF8(s[:n], "")
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	if cut {
		s += "..."
	}
	return s
}

// reportedIP returns the IP to send: the configured one, or the local address of a connection
// to a config-server, found once and remembered. When that connection fails the config-server
// is unreachable (the error); when it gives no usable address the request goes without ip
// (the config-server then uses the request's source address) and the next try waits for the
// back-off (AZRefreshInterval), since every try costs a connection.
func (c *client) reportedIP(ctx context.Context, srv server) (string, *ServerError) {
	if c.ip != "" {
		return c.ip, nil
	}
	if c.learnedIP != "" {
		return c.learnedIP, nil
	}
	now := c.clk.Now()
	if now.Before(c.nextLearn) {
		return "", nil
	}
	addr, err := c.localAddr(ctx, srv.hostPort)
	if err != nil {
		return "", unreachable(srv, err, c.timeout.String())
	}
	ip, err := usableIP(addr)
	if err != nil {
		c.nextLearn = now.Add(c.backoff)
		c.notes.ipUnknown(err, c.backoff)
		return "", nil
	}
	c.learnedIP = ip
	c.notes.ipKnown(ip)
	return ip, nil
}

// usableIP extracts a specific IP from a connection's local address.
func usableIP(a net.Addr) (string, error) {
	if a == nil {
		return "", errors.New("the connection has no local address")
	}
	var ip netip.Addr
	switch x := a.(type) {
	case *net.TCPAddr:
		ip, _ = netip.AddrFromSlice(x.IP)
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return "", fmt.Errorf("local address %q is not an IP address", a.String())
		}
		ip = ap.Addr()
	}
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || ip.IsUnspecified() {
		return "", fmt.Errorf("local address %q is not a usable IP address", a.String())
	}
	return ip.String(), nil
}
