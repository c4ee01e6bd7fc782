package lbd

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/lbd-go/lbd/nodes"
	_ "github.com/lbd-go/lbd/nodes/dns" // registers lbdns and its parameters
)

// The reference (docs/reference.md) has an entry for every DSN parameter lbd reads, a row for
// every Option and every field of Config, so that it cannot drift from the code. The node
// sources of other modules (lbremote, lbetcd) are checked by internal/e2e.
func TestReferenceCoversTheCode(t *testing.T) {
	b, err := os.ReadFile("docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range params {
		if !strings.Contains(doc, "\n### `"+p.name+"`\n") {
			t.Errorf("docs/reference.md has no entry (### `%s`) for the DSN parameter %s", p.name, p.name)
		}
	}
	dns, ok := nodes.Lookup("lbdns")
	if !ok || len(dns.Params) == 0 {
		t.Fatal("lbdns is not registered with its parameters")
	}
	for _, name := range dns.Params {
		if !strings.Contains(doc, "\n### `"+name+"`\n") {
			t.Errorf("docs/reference.md has no entry (### `%s`) for lbdns's parameter %s", name, name)
		}
	}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		if f := ct.Field(i); f.IsExported() && !strings.Contains(doc, "\n| `"+f.Name+"` |") {
			t.Errorf("docs/reference.md's Config fields table has no row for Config.%s", f.Name)
		}
	}
	for _, opt := range options(t) {
		if !strings.Contains(doc, "\n| `"+opt+"(") {
			t.Errorf("docs/reference.md's Options table has no row for %s", opt)
		}
	}
}

// options returns the names of the package's exported functions that return an Option.
func options(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !fn.Name.IsExported() || fn.Type.Results == nil || len(fn.Type.Results.List) != 1 {
				continue
			}
			if id, ok := fn.Type.Results.List[0].Type.(*ast.Ident); ok && id.Name == "Option" {
				out = append(out, fn.Name.Name)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("found no function returning Option: the check would be empty")
	}
	return out
}
