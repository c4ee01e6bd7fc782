package testkit

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// heavy are packages the root package must not link, directly or through any of its imports:
// each would add megabytes to every program that imports lbd (net/http alone about 1.6 MB).
// What needs them lives in a package of its own that only its users import: statuscheck (the
// statusURL check), status (the status page). .ci/release-check measures the bytes.
var heavy = []string{"net/http", "net/rpc", "html/template", "text/template", "expvar"}

// TestRootLinksNothingHeavy fails when the root package reaches a heavy package, and names the
// chain of imports that does.
func TestRootLinksNothingHeavy(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the root package's dependencies: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "github.com/lbd-go/lbd")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	if len(imports["github.com/lbd-go/lbd"]) == 0 {
		t.Fatalf("go list gave no imports of the root package:\n%s", out)
	}
	// Breadth first from the root, so that each chain printed is a shortest one.
	via := map[string]string{"github.com/lbd-go/lbd": ""}
	queue := []string{"github.com/lbd-go/lbd"}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, imp := range imports[p] {
			if _, seen := via[imp]; !seen {
				via[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	for _, h := range heavy {
		if _, ok := via[h]; !ok {
			continue
		}
		chain := []string{h}
		for p := via[h]; p != ""; p = via[p] {
			chain = append(chain, p)
		}
		slices.Reverse(chain)
		t.Errorf("the root package links %s (%s): move what needs it to a package of its own, as statuscheck is", h, strings.Join(chain, " → "))
	}
}

// unlinked are functions a program calling lbd.Open must not contain, though packages it links
// define them: each is reached only through a call lbd avoids, and brings code no other part of
// such a program needs. .ci/release-check measures the bytes.
var unlinked = []struct{ symbol, why string }{
	// errors.As checks assignability with internal/reflectlite (about 30 KB of the binary);
	// errors.AsType needs no reflection.
	{"errors.As", "use errors.AsType"},
	// strings.Replacer's tables and tries (about 24 KB); go-sql-driver does not link them.
	{"strings.(*Replacer).Replace", "replace with strings.ReplaceAll or a loop"},
	// runtime/debug's build information parser (about 23 KB), linked by any package-level
	// variable whose initialiser reads the build information.
	{"runtime/debug.ParseBuildInfo", "read the build information inside a function, not in a variable's initialiser"},
}

// TestRootLinksNothingNeedless builds a program calling lbd.Open and fails when it holds one of
// unlinked's functions, and names the chain of calls that reaches it.
func TestRootLinksNothingNeedless(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build a program: %v", err)
	}
	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	prog := "package main\n\nimport \"github.com/lbd-go/lbd\"\n\nfunc main() {\n\tdb, err := lbd.Open(\"u:p@lb(127.0.0.1:3306)/db\")\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tdb.Close()\n}\n"
	if err := os.WriteFile(main, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	// The linker prints, for each function it keeps, the one that first reached it.
	cmd := exec.Command(goCmd, "build", "-ldflags=-dumpdep", "-o", filepath.Join(dir, "prog"), main)
	cmd.Dir = filepath.Join("..", "..")
	var out bytes.Buffer
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out.Bytes())
	}
	parent := map[string]string{}
	for line := range strings.Lines(out.String()) {
		from, to, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " -> ")
		if !ok {
			continue
		}
		from, _, _ = strings.Cut(from, " <")
		to, _, _ = strings.Cut(to, " <")
		if _, seen := parent[to]; !seen {
			parent[to] = from
		}
	}
	if len(parent) == 0 {
		t.Fatalf("the linker printed no dependencies:\n%s", out.Bytes())
	}
	for _, u := range unlinked {
		if _, ok := parent[u.symbol]; !ok {
			continue
		}
		var chain []string
		for s, n := u.symbol, 0; s != "" && s != "_" && n < 12; s, n = parent[s], n+1 {
			chain = append(chain, s)
		}
		t.Errorf("a program calling lbd.Open links %s (%s): %s", u.symbol, strings.Join(chain, " ← "), u.why)
	}
}
