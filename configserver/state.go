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
	ss := &schemaState{doc: d, full: newAnswer(d.Proxy)}
	if len(d.AZProxy) > 0 {
		ss.byAZ = make(map[string]answer, len(d.AZProxy))
		for az, list := range d.AZProxy {
			ss.byAZ[az] = newAnswer(list)
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

// listBody is the 200 answer; the field order (code, md5, data) is the Java server's.
type listBody struct {
	Code int      `json:"code"`
	MD5  string   `json:"md5"`
	Data []string `json:"data"`
}

func newAnswer(list []string) answer {
	sorted := slices.Clone(list)
	slices.Sort(sorted)
	a := answer{list: sorted, md5: nodes.ListMD5(sorted)}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(listBody{Code: 200, MD5: a.md5, Data: sorted}) // strings always encode
	a.body = bytes.TrimRight(b.Bytes(), "\n")
	return a
}

// sameDocument reports whether two documents serve the same thing, to keep logs quiet when a
// backend re-reads an unchanged store.
func sameDocument(a, b *nodes.Document) bool {
	return reflect.DeepEqual(a, b)
}
