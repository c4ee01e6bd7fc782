package configserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/lbd-go/lbd/nodes"
)

// Backend is where a Server's documents come from.
//
// A Backend publishes whole maps, schema name → document. A published map and its documents are
// never modified afterwards: a backend builds a new map for every change. The Server keeps
// serving the last published map whatever happens to the backend's store, so a backend publishes
// only what it has validated and leaves the map alone when its store is unreachable.
type Backend interface {
	// Kind names the backend in /monitor ("etcd", "file", "memory").
	Kind() string
	// Start reads every document and passes them to publish before returning nil. An unreadable
	// store or any invalid document is an error, and the Server does not start. After a nil
	// return the backend follows changes and calls publish with every new map until Close; ctx
	// bounds only the first read. Calls to publish never overlap.
	Start(ctx context.Context, publish func(map[string]*nodes.Document)) error
	// Reload re-reads the store now and publishes the result (the /reload endpoint). On error
	// the served map is what it was, or what the backend's own rules keep (see each backend).
	Reload(ctx context.Context) error
	// Close stops following changes and waits for the backend's goroutines. It is idempotent.
	Close() error
}

// Memory is a Backend holding documents in memory, changed with Put and Delete. It suits tests
// of clients and programs that compute documents themselves. The zero value is not usable; call
// NewMemory.
type Memory struct {
	mu      sync.Mutex
	docs    map[string]*nodes.Document
	publish func(map[string]*nodes.Document)
}

// NewMemory returns a Memory backend holding docs. It fails if a document is invalid (see
// nodes.Document.Validate) or two documents name the same schema.
func NewMemory(docs ...*nodes.Document) (*Memory, error) {
	m := &Memory{docs: make(map[string]*nodes.Document, len(docs))}
	for _, d := range docs {
		if d == nil {
			return nil, errors.New("configserver: nil document")
		}
		if err := validate(d); err != nil {
			return nil, fmt.Errorf("configserver: %w", err)
		}
		if m.docs[d.Schema] != nil {
			return nil, fmt.Errorf("configserver: schema %q is listed twice", d.Schema)
		}
		m.docs[d.Schema] = cloneDoc(d)
	}
	return m, nil
}

// Kind implements Backend; it is "memory".
func (m *Memory) Kind() string { return "memory" }

// Start implements Backend; it publishes the documents given to NewMemory and later Puts.
func (m *Memory) Start(_ context.Context, publish func(map[string]*nodes.Document)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.publish != nil {
		return errors.New("configserver: memory backend started twice")
	}
	m.publish = publish
	publish(maps.Clone(m.docs))
	return nil
}

// Reload implements Backend; memory has nothing to re-read, so it publishes the current
// documents again.
func (m *Memory) Reload(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.publish != nil {
		m.publish(maps.Clone(m.docs))
	}
	return nil
}

// Put adds or replaces the document of d.Schema. An invalid document is an error and changes
// nothing. The server serves the new document when Put returns.
func (m *Memory) Put(d *nodes.Document) error {
	if d == nil {
		return errors.New("configserver: nil document")
	}
	if err := validate(d); err != nil {
		return fmt.Errorf("configserver: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next := maps.Clone(m.docs)
	next[d.Schema] = cloneDoc(d)
	m.docs = next
	if m.publish != nil {
		m.publish(maps.Clone(next))
	}
	return nil
}

// Delete stops serving schema; it does nothing for an unknown schema.
func (m *Memory) Delete(schema string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.docs[schema] == nil {
		return
	}
	next := maps.Clone(m.docs)
	delete(next, schema)
	m.docs = next
	if m.publish != nil {
		m.publish(maps.Clone(next))
	}
}

// Close implements Backend; Memory has no goroutine.
func (m *Memory) Close() error { return nil }

// cloneDoc deep-copies a document so that a caller changing its own value later cannot change
// what is served.
func cloneDoc(d *nodes.Document) *nodes.Document {
	c := *d
	c.APIKeys = append([]string(nil), d.APIKeys...)
	c.Proxy = append([]string(nil), d.Proxy...)
	c.AZList = cloneListMap(d.AZList)
	c.AZProxy = cloneListMap(d.AZProxy)
	c.Weight = maps.Clone(d.Weight)
	c.Role = maps.Clone(d.Role)
	c.Group = cloneListMap(d.Group)
	return &c
}

func cloneListMap(m map[string][]string) map[string][]string {
	if m == nil {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// validate checks a document as the server needs it: nodes.Document.Validate and checkAPIKeys.
func validate(d *nodes.Document) error {
	if err := d.Validate(""); err != nil {
		return err
	}
	return checkAPIKeys(d)
}

// checkAPIKeys refuses a document one of whose api.keys starts or ends with white space. HTTP
// trims a header value, so no Authorization header can carry such a key: every client of the
// schema would be refused, with nothing said when the document was loaded. The error names the
// schema and the key's index, never the key.
func checkAPIKeys(d *nodes.Document) error {
	for i, k := range d.APIKeys {
		if strings.TrimSpace(k) != k {
			return fmt.Errorf("nodes: schema %q: api.keys[%d] has leading or trailing spaces, which no Authorization header can carry: remove them from the key", d.Schema, i)
		}
	}
	return nil
}
