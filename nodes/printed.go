package nodes

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
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
	// NotData names fields of Fields that are not data (a TLS config, a logger, a clock):
	// MarshalJSON shows each as true when it is set and leaves it out when it is not.
	NotData []string
	// JSON, when set, is what MarshalJSON encodes instead of Fields. With neither, it encodes
	// Text.
	JSON any
}

// PrintedAs is how a value that holds locks, and is used by pointer only, prints: as name
// around its config (which prints itself without its secrets), with more attributes for logs.
func PrintedAs(name string, config fmt.Stringer, attrs ...slog.Attr) Printed {
	return Printed{Name: name, Text: name + "{" + config.String() + "}",
		Attrs: append([]slog.Attr{slog.Any("config", config)}, attrs...), JSON: config}
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

// MarshalJSON encodes JSON, else Fields (NotData shown as whether each is set), else Text.
func (p Printed) MarshalJSON() ([]byte, error) {
	switch {
	case p.JSON != nil:
		return json.Marshal(p.JSON)
	case p.Fields == nil:
		return json.Marshal(p.Text)
	case len(p.NotData) == 0:
		return json.Marshal(p.Fields)
	}
	v := reflect.ValueOf(p.Fields)
	b := []byte{'{'}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		value := v.Field(i).Interface()
		if slices.Contains(p.NotData, f.Name) {
			if v.Field(i).IsZero() {
				continue
			}
			value = true
		}
		data, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, f.Name)
		b = append(append(b, ':'), data...)
	}
	return append(b, '}'), nil
}
