package nodes

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// Document is the per-schema JSON document that lb-driver's config-server stores (in etcd under
// <prefix>/<schema>, or in a file) and that lbd's etcd source and config-server read:
//
//	{"schema":"im_user","auth.enable":true,"api.keys":["k1"],"proxy":["10.0.0.1:2883","10.0.0.2:2883"],
//	 "az.list":{"az1":["10.1.0.0/16"]},"az.proxy":{"az1":["10.1.0.5:2883"]},"proxy.policy":"az",
//	 "weight":{"10.0.0.2:2883":2},"role":{"10.0.0.1:2883":"primary","10.0.0.2:2883":"replica"},
//	 "group":{"10.0.0.2:2883":["analytics"]}}
//
// The az.* fields and proxy.policy are lbd's AZ extension, weight its weighted
// least-connections: proxy address → weight from 0 to MaxWeight, 0 or absent meaning
// DefaultWeight (as a DNS SRV weight of 0 does here), role its roles: proxy address →
// "primary", "replica" or "standby" (see ParseRole), absent meaning RoleUnknown (a role check,
// when configured, finds it), and group its groups: proxy address → the names of the groups
// it belongs to (see CheckGroups), absent meaning none. lb-driver's Java server ignores fields
// it does not know.
type Document struct {
	Schema      string              `json:"schema"`
	AuthEnable  bool                `json:"auth.enable,omitempty"`
	APIKeys     []string            `json:"api.keys,omitempty"`
	Proxy       []string            `json:"proxy"`
	AZList      map[string][]string `json:"az.list,omitempty"`      // AZ name → CIDR blocks of clients in it
	AZProxy     map[string][]string `json:"az.proxy,omitempty"`     // AZ name → that AZ's proxies
	ProxyPolicy string              `json:"proxy.policy,omitempty"` // "default" (everyone gets proxy) or "az"
	Weight      map[string]int      `json:"weight,omitempty"`       // proxy address → weight; absent: DefaultWeight
	Role        map[string]string   `json:"role,omitempty"`         // proxy address → role name; absent: RoleUnknown
	Group       map[string][]string `json:"group,omitempty"`        // proxy address → group names; absent: none
}

// Nodes returns the entries of list (the document's proxy or one of its az.proxy lists) as
// nodes with the weights, roles and groups (in name order) the document gives them, and as zone (Node.AZ) the AZ whose
// az.proxy set lists them (the first by name when several do; none when none does), so that a
// client reading the whole proxy list can keep to its own zone (lbd's localZone). The document
// must be valid.
func (d *Document) Nodes(list []string) []Node {
	weights := make(map[string]int, len(d.Weight))
	for a, w := range d.Weight {
		c, _ := Canonical(a)
		weights[c] = w
	}
	roles := make(map[string]Role, len(d.Role))
	for a, name := range d.Role {
		c, _ := Canonical(a)
		roles[c], _ = ParseRole(name)
	}
	groups := make(map[string]string, len(d.Group))
	for a, names := range d.Group {
		c, _ := Canonical(a)
		groups[c] = JoinGroups(names...)
	}
	zones := make(map[string]string)
	for _, az := range slices.Sorted(maps.Keys(d.AZProxy)) {
		for _, a := range d.AZProxy[az] {
			c, _ := Canonical(a)
			if _, ok := zones[c]; !ok {
				zones[c] = az
			}
		}
	}
	out := make([]Node, len(list))
	for i, a := range list {
		c, _ := Canonical(a)
		out[i] = Node{Addr: a, Weight: weights[c], Role: roles[c], AZ: zones[c], Groups: groups[c]}
	}
	return out
}

// Proxy policies.
const (
	PolicyDefault = "default"
	PolicyAZ      = "az"
)

// rawDocument accepts api.keys of any JSON scalar type: lb-driver stringifies them.
type rawDocument struct {
	Document
	APIKeys []json.RawMessage `json:"api.keys"`
}

// ParseDocument reads and validates a document. wantSchema, when not "", must equal the
// document's schema (etcd keys and file entries name the schema they hold). The rules follow
// lb-driver's config-server: schema required; proxy present, non-empty, every entry host:port;
// auth.enable needs at least one api key. lbd adds: az.proxy entries valid, az.list entries valid
// CIDR blocks, proxy.policy "default", "az" or absent, every weight from 0 to MaxWeight and
// every role primary, replica or standby, every proxy's groups as CheckGroups wants them, each
// for a proxy the document lists and given once, and at most MaxGroupSets distinct sets of
// groups over the proxy list and over each az.proxy list.
func ParseDocument(data []byte, wantSchema string) (*Document, error) {
	var raw rawDocument
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("nodes: document is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("nodes: document has trailing data after the JSON object")
	}
	d := raw.Document
	d.APIKeys = nil
	for _, k := range raw.APIKeys {
		var s string
		if json.Unmarshal(k, &s) != nil {
			s = string(k) // a number or boolean, as lb-driver stringifies it
		}
		d.APIKeys = append(d.APIKeys, s)
	}
	for i, p := range d.Proxy {
		d.Proxy[i] = strings.TrimSpace(p)
	}
	if err := d.Validate(wantSchema); err != nil {
		return nil, err
	}
	return &d, nil
}

// Validate checks the document as ParseDocument does.
func (d *Document) Validate(wantSchema string) error {
	if d.Schema == "" {
		return errors.New("nodes: document has no schema")
	}
	if wantSchema != "" && d.Schema != wantSchema {
		return fmt.Errorf("nodes: document is for schema %q, stored under %q", d.Schema, wantSchema)
	}
	if d.AuthEnable && len(d.APIKeys) == 0 {
		return fmt.Errorf("nodes: schema %q: auth.enable is true but api.keys is empty", d.Schema)
	}
	if err := checkList(d.Proxy); err != nil {
		return fmt.Errorf("nodes: schema %q: proxy: %w", d.Schema, err)
	}
	for az, list := range d.AZProxy {
		if err := CheckZone(az); err != nil {
			return fmt.Errorf("nodes: schema %q: az.proxy: the AZ name is the proxies' zone: %w", d.Schema, err)
		}
		if err := checkList(list); err != nil {
			return fmt.Errorf("nodes: schema %q: az.proxy[%q]: %w", d.Schema, az, err)
		}
	}
	for az, blocks := range d.AZList {
		for _, b := range blocks {
			if _, err := netip.ParsePrefix(strings.TrimSpace(b)); err != nil {
				return fmt.Errorf("nodes: schema %q: az.list[%q]: %q is not a CIDR block", d.Schema, az, b)
			}
		}
	}
	if err := d.checkWeights(); err != nil {
		return err
	}
	if err := d.checkRoles(); err != nil {
		return err
	}
	if err := d.checkGroups(); err != nil {
		return err
	}
	switch d.ProxyPolicy {
	case "", PolicyDefault, PolicyAZ:
	default:
		return fmt.Errorf("nodes: schema %q: proxy.policy %q, want %q or %q", d.Schema, d.ProxyPolicy, PolicyDefault, PolicyAZ)
	}
	return nil
}

// checkWeights refuses a weight out of range, or one for an address the document does not
// list (a typo there would silently leave the proxy at the default weight).
func (d *Document) checkWeights() error {
	return checkPerProxy(d, "weight", d.Weight, func(w int) error { return CheckWeight(w) })
}

// checkRoles refuses a role that is not primary, replica or standby, or one for an address the
// document does not list (a typo there would silently leave the proxy's role unknown).
func (d *Document) checkRoles() error {
	return checkPerProxy(d, "role", d.Role, func(name string) error {
		if r, err := ParseRole(name); err != nil || r == RoleUnknown {
			return fmt.Errorf("role %s: want \"primary\", \"replica\" or \"standby\" (leave the proxy out of role when its role is not known)", quote(name))
		}
		return nil
	})
}

// checkGroups refuses a proxy's groups that CheckGroups refuses, groups for an address the
// document does not list, and lists whose proxies have more than MaxGroupSets distinct sets of
// groups.
func (d *Document) checkGroups() error {
	if err := checkPerProxy(d, "group", d.Group, func(names []string) error {
		if len(names) == 0 {
			return errors.New("an empty list of groups (leave the proxy out of group when it belongs to none)")
		}
		for _, g := range names {
			if strings.IndexByte(g, GroupSep) >= 0 {
				return fmt.Errorf("group %s holds %q: give each group as an element of the list", quote(g), GroupSep)
			}
		}
		return CheckGroups(strings.Join(names, string(GroupSep)))
	}); err != nil {
		return err
	}
	if len(d.Group) == 0 {
		return nil
	}
	for _, az := range append([]string{""}, slices.Sorted(maps.Keys(d.AZProxy))...) {
		list, field := d.Proxy, "proxy"
		if az != "" {
			list, field = d.AZProxy[az], fmt.Sprintf("az.proxy[%q]", az)
		}
		if err := checkGroupSets(d.Nodes(list)); err != nil {
			return fmt.Errorf("nodes: schema %q: %s: %w", d.Schema, field, err)
		}
	}
	return nil
}

// checkPerProxy checks one of the document's maps keyed by proxy address (field names it in
// errors): every key a listed proxy, no proxy under two spellings, every value accepted by
// check.
func checkPerProxy[V any](d *Document, field string, m map[string]V, check func(V) error) error {
	if len(m) == 0 {
		return nil
	}
	listed := make(map[string]bool)
	for _, list := range append([][]string{d.Proxy}, slices.Collect(maps.Values(d.AZProxy))...) {
		for _, a := range list {
			c, _ := Canonical(a)
			listed[c] = true
		}
	}
	seen := make(map[string]string, len(m))
	for _, a := range slices.Sorted(maps.Keys(m)) {
		c, err := Canonical(a)
		if err != nil {
			return fmt.Errorf("nodes: schema %q: %s: %w", d.Schema, field, errors.New(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
		if !listed[c] {
			return fmt.Errorf("nodes: schema %q: %s names %s, which neither proxy nor az.proxy lists", d.Schema, field, quote(a))
		}
		if other, dup := seen[c]; dup {
			return fmt.Errorf("nodes: schema %q: %s names one proxy twice: %s and %s", d.Schema, field, quote(other), quote(a))
		}
		seen[c] = a
		if err := check(m[a]); err != nil {
			return fmt.Errorf("nodes: schema %q: %s of %s: %w", d.Schema, field, quote(a), errors.New(strings.TrimPrefix(err.Error(), "nodes: ")))
		}
	}
	return nil
}

func checkList(list []string) error {
	if len(list) == 0 {
		return ErrEmptySet
	}
	if len(list) > MaxNodes {
		return countError(len(list))
	}
	for _, a := range list {
		if err := CheckAddr(a); err != nil { // no surrounding space here, unlike Canonical
			return errors.New(strings.TrimPrefix(err.Error(), "nodes: "))
		}
	}
	return checkDistinct(list)
}

// AZOf returns the AZ whose CIDR blocks contain ip, or "" when none does or ip is not an IP.
func (d *Document) AZOf(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	addr = addr.Unmap()
	azs := make([]string, 0, len(d.AZList))
	for az := range d.AZList {
		azs = append(azs, az)
	}
	slices.Sort(azs) // deterministic when blocks overlap
	for _, az := range azs {
		for _, b := range d.AZList[az] {
			if p, err := netip.ParsePrefix(strings.TrimSpace(b)); err == nil && unmapPrefix(p).Contains(addr) {
				return az
			}
		}
	}
	return ""
}

// unmapPrefix turns an IPv4-mapped IPv6 block (::ffff:10.0.0.0/104) into its IPv4 form, so it
// matches the IPv4 addresses it names.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if !p.Addr().Is4In6() || p.Bits() < 96 {
		return p
	}
	return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
}

// ListMD5 is the version lb-driver's config-server gives a proxy list: the lowercase hex MD5 of
// the compact JSON array of the list sorted in string order, e.g. MD5 of
// ["10.0.0.1:3306","10.0.0.2:3306"]. Java and Go clients compare it as an opaque string, so it
// must match the Java server's byte for byte.
func ListMD5(list []string) string {
	sorted := slices.Clone(list)
	slices.Sort(sorted)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // fastjson2 does not escape <, > and &
	enc.Encode(sorted)       // a []string always encodes
	sum := md5.Sum(bytes.TrimRight(b.Bytes(), "\n"))
	return hex.EncodeToString(sum[:])
}
