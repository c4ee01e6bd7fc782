package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pkg is a listed package of module mod importing imports.
func pkg(path, mod string, imports ...string) listed {
	p := listed{ImportPath: path, Imports: imports}
	if mod != "" {
		p.Module = &struct{ Path string }{mod}
	}
	return p
}

const (
	root = "github.com/lbd-go/lbd"
	cs   = "github.com/lbd-go/lbd/configserver"
)

// A listing as `go list -deps -test` gives it for configserver: its package, the test
// variants, and the dependencies in the root module and the standard library.
func TestViolations(t *testing.T) {
	deps := []listed{
		pkg("fmt", ""),
		pkg(root+"/nodes", root, root+"/internal/clock"), // the root's own internal: fine
		pkg(root+"/internal/clock", root),
		pkg(root+"/internal/testkit", root),
		pkg(root+"/internal/testkit [x]", root),
		pkg(root+"/nodes/nodestest", root, root+"/nodes"),
		pkg(cs+"/internal/wire", cs), // configserver's own internal: fine
		pkg("go.uber.org/goleak/internal/stack", "go.uber.org/goleak"),
	}
	cases := []struct {
		name string
		pkgs []listed
		want [][]string // parts of each reported line, one slice per line
	}{
		{"clean", []listed{
			pkg(cs, cs, "fmt", root+"/nodes", cs+"/internal/wire"),
			pkg(cs+" ["+cs+".test]", cs, "fmt", root+"/nodes/nodestest"),
			pkg(cs+".test", cs, cs+" ["+cs+".test]", "testing"),
		}, nil},
		{"a test imports the root's internal", []listed{
			pkg(cs, cs, "fmt"),
			pkg(cs+" ["+cs+".test]", cs, "fmt", root+"/internal/testkit"),
		}, [][]string{{cs + " [" + cs + ".test]", "imports " + root + "/internal/testkit (module " + root + ")"}}},
		{"a test-only variant of the import", []listed{
			pkg(cs+"_test ["+cs+".test]", cs, root+"/internal/testkit [x]"),
		}, [][]string{{cs + "_test", "imports " + root + "/internal/testkit (module " + root + ")"}}},
		{"code imports another module's internal", []listed{
			pkg(cs, cs, root+"/internal/clock"),
		}, [][]string{{cs + " (module " + cs + ") imports " + root + "/internal/clock"}}},
		{"a package that does not load", []listed{
			{ImportPath: cs, Module: &struct{ Path string }{cs}, Error: &struct{ Err string }{"no Go files"}},
		}, [][]string{{cs + ": no Go files"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := violations(cs, append(slices.Clone(deps), c.pkgs...))
			if len(got) != len(c.want) {
				t.Fatalf("got %d reports, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n"))
			}
			for i, parts := range c.want {
				for _, part := range parts {
					if !strings.Contains(got[i], part) {
						t.Errorf("report %q lacks %q", got[i], part)
					}
				}
			}
		})
	}
}

func TestIsInternal(t *testing.T) {
	for path, want := range map[string]bool{
		root + "/internal/testkit":              true,
		root + "/internal":                      true,
		root + "/nodes/etcd/internal/x":         true,
		root + "/internalx":                     false,
		root + "/nodes/internals":               false,
		"github.com/someone/internal-tools/pkg": false,
	} {
		if got := isInternal(path); got != want {
			t.Errorf("isInternal(%q) = %v, want %v", path, got, want)
		}
	}
}

// The check on a checkout of its own: a module whose test imports the root's internal package
// fails it, and the same module without that import passes. It runs the go command, so it is
// skipped with -short.
func TestCheckImportsOnAModuleTree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	repo := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.work", "go 1.26.0\n\nuse (\n\t.\n\t./sub\n\t./internal/e2e\n)\n")
	write("go.mod", "module example.com/r\n\ngo 1.26.0\n")
	write("internal/kit/kit.go", "package kit\n\nconst K = 1\n")
	write("sub/go.mod", "module example.com/r/sub\n\ngo 1.26.0\n")
	write("sub/sub.go", "package sub\n\nconst S = 1\n")
	write("internal/e2e/go.mod", "module example.com/r/internal/e2e\n\ngo 1.26.0\n")
	write("internal/e2e/e2e_test.go", "package e2e\n\nimport (\n\t\"testing\"\n\n\t\"example.com/r/internal/kit\"\n)\n\nfunc TestK(t *testing.T) { _ = kit.K }\n")
	dirs, err := moduleDirs(repo)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkImports(repo, dirs); err != nil {
		t.Fatalf("a clean tree (only internal/e2e imports the root's internal): %v", err)
	}
	write("sub/sub_test.go", "package sub\n\nimport (\n\t\"testing\"\n\n\t\"example.com/r/internal/kit\"\n)\n\nfunc TestK(t *testing.T) { _ = kit.K }\n")
	err = checkImports(repo, dirs)
	if err == nil || !strings.Contains(err.Error(), "example.com/r/sub [example.com/r/sub.test] (module example.com/r/sub) imports example.com/r/internal/kit (module example.com/r)") {
		t.Fatalf("sub's test imports the root's internal/kit: checkImports = %v", err)
	}
}
