package nodes

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// Printed is how a value that holds secrets prints, its secrets already replaced (Redact,
// RedactParams). Every type of lbd's that holds a secret builds one and hands its String,
// GoString (%#v), LogValue (log/slog) and MarshalJSON to it, so that the four ways of printing
// are written once here rather than by hand for each type.
type Printed struct {
	// Name is the type's name as %#v prints it, such as "etcd.Config".
	Name string
	// Text is what String returns.
	Text string
	// Fields is the value with its secrets replaced, converted to a type of the same fields
	// without these methods: GoString prints it with %#v under Name, and MarshalJSON encodes it
	// when JSON is nil. Nil for a type printed by its Text alone (one that holds locks and is
	// used by pointer): GoString then returns Text.
	Fields any
	// Attrs are LogValue's group; without any, LogValue is Text.
	Attrs []slog.Attr
	// JSON, when set, is what MarshalJSON encodes instead of Fields (a shape that leaves out
	// what JSON cannot carry, such as a TLS config or a logger). With neither, it encodes Text.
	JSON any
}

// String returns Text.
func (p Printed) String() string { return p.Text }

// GoString returns Fields printed with %#v under Name, or Text when there are none.
func (p Printed) GoString() string {
	if p.Fields == nil {
		return p.Text
	}
	return strings.Replace(fmt.Sprintf("%#v", p.Fields), fmt.Sprintf("%T", p.Fields), p.Name, 1)
}

// LogValue returns the group of Attrs, or Text as a string.
func (p Printed) LogValue() slog.Value {
	if len(p.Attrs) == 0 {
		return slog.StringValue(p.Text)
	}
	return slog.GroupValue(p.Attrs...)
}

// MarshalJSON encodes JSON, else Fields, else Text.
func (p Printed) MarshalJSON() ([]byte, error) {
	switch {
	case p.JSON != nil:
		return json.Marshal(p.JSON)
	case p.Fields != nil:
		return json.Marshal(p.Fields)
	}
	return json.Marshal(p.Text)
}
