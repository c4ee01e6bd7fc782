package configserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/lbd-go/lbd/nodes"
)

// state is what the handler serves; it is replaced whole when documents change and never
// modified, so requests read it without locking.
type state struct {
	schemas map[string]*schemaState
}

// schemaState is one schema's document with its answers computed in advance.
type schemaState struct {
	doc     *nodes.Document
	full    answer            // the proxy list
	byAZ    map[string]answer // az.proxy lists, by AZ name
	keySums [][sha256.Size]byte
}

// answer is one list variant: sorted, its md5 and the complete 200 body.
type answer struct {
	list []string
	md5  string
	body []byte
}

func newSchemaState(d *nodes.Document) *schemaState {
	ss := &schemaState{doc: d, full: newAnswer(d.Nodes(d.Proxy))}
	if len(d.AZProxy) > 0 {
		ss.byAZ = make(map[string]answer, len(d.AZProxy))
		for az, list := range d.AZProxy {
			ss.byAZ[az] = newAnswer(d.Nodes(list))
		}
	}
	for _, k := range d.APIKeys {
		ss.keySums = append(ss.keySums, sha256.Sum256([]byte(k)))
	}
	return ss
}

// protected reports whether the schema's document asks for API keys (auth.enable) or lists
// any: such a schema is shown only to requests carrying the admin token.
func (ss *schemaState) protected() bool {
	return ss.doc.AuthEnable || len(ss.doc.APIKeys) > 0
}

// listBody is the 200 answer; the field order (code, md5, data) is the Java server's. weight,
// role, zone and group are lbd's: the weights, roles, zones (the AZ whose az.proxy set lists
// them) and groups (their names, in order) of the listed proxies that have one (Java clients
// skip fields they do not know, and keep reading data as the plain list it always was).
type listBody struct {
	Code   int               `json:"code"`
	MD5    string            `json:"md5"`
	Data   []string          `json:"data"`
	Weight map[string]int    `json:"weight,omitempty"`
	Role   map[string]string `json:"role,omitempty"`
	Zone   map[string]string `json:"zone,omitempty"`

	Group map[string][]string `json:"group,omitempty"`
}

// newAnswer builds a variant's answer. Without weights, roles, zones and groups its md5 is the
// Java server's, byte for byte; with them it is the MD5 of the entries spelled as a static list
// spells them, "addr*weight#role+group~zone" (nodes.Node.Entry), so a change of weight, role,
// zone or groups alone (a switchover) is a new version and clients holding the old md5 get the
// new answer.
func newAnswer(list []nodes.Node) answer {
	addrs := make([]string, len(list))
	entries := make([]string, len(list))
	var weights map[string]int
	var roles, zones map[string]string
	var groups map[string][]string
	for i, n := range list {
		addrs[i], entries[i] = n.Addr, n.Entry()
		if n.Weight != 0 {
			if weights == nil {
				weights = make(map[string]int)
			}
			weights[n.Addr] = n.Weight
		}
		if n.Role != nodes.RoleUnknown {
			if roles == nil {
				roles = make(map[string]string)
			}
			roles[n.Addr] = n.Role.String()
		}
		if n.AZ != "" {
			if zones == nil {
				zones = make(map[string]string)
			}
			zones[n.Addr] = n.AZ
		}
		if n.Groups != "" {
			if groups == nil {
				groups = make(map[string][]string)
			}
			groups[n.Addr] = nodes.SplitGroups(n.Groups)
		}
	}
	sorted := slices.Clone(addrs)
	slices.Sort(sorted)
	slices.Sort(entries)
	a := answer{list: sorted, md5: nodes.ListMD5(entries)}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(listBody{Code: 200, MD5: a.md5, Data: sorted, Weight: weights, Role: roles, Zone: zones, Group: groups}) // strings and ints always encode
	a.body = bytes.TrimRight(b.Bytes(), "\n")
	return a
}

// sameDocument reports whether two documents serve the same thing, to keep logs quiet when a
// backend re-reads an unchanged store.
func sameDocument(a, b *nodes.Document) bool {
	return reflect.DeepEqual(a, b)
}
