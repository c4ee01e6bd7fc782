package testkit

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/lbd-go/lbd"

// layers are the packages whose imports run one way, from the top down: each may import the
// ones of the tiers below it, never one of its own tier or above it (internal/physical's,
// internal/logical's and internal/health's doc.go say why). internal/connect, the connect path,
// uses internal/health's retry budget and topology, and internal/logical is handed its dials as
// functions. internal/health, internal/logical and internal/rebalance share a tier: the root
// builds each, and none imports another. The first package of each tier is one every package
// of the tier above imports. The test lives here, in a package that imports none of them, so
// that it still runs when a wrong import makes a cycle that stops the layers from building.
var layers = [][]string{
	{module},
	{module + "/internal/connect"},
	{module + "/internal/health", module + "/internal/logical", module + "/internal/rebalance"},
	{module + "/internal/physical"},
	{module + "/internal/nodetable"},
	{module + "/internal/pick"},
}

// dirOf is the directory of a package of this module, from this test's directory.
func dirOf(path string) string {
	return filepath.Join("..", "..", filepath.FromSlash(strings.TrimPrefix(path, module)))
}

// importsOf walks the imports of pkg within this module, depth first, and calls visit for each
// import with the chain of packages that led to it; it returns every package of the module it
// reached.
func importsOf(t *testing.T, pkg string, visit func(imp string, via []string)) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var walk func(path string, via []string)
	walk = func(path string, via []string) {
		if seen[path] {
			return
		}
		seen[path] = true
		p, err := build.ImportDir(dirOf(path), 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range p.Imports {
			visit(imp, append(via, path))
			if strings.HasPrefix(imp, module+"/") {
				walk(imp, append(via, path))
			}
		}
	}
	walk(pkg, nil)
	return seen
}

// TestImportsRunOneWay fails when a layer imports, directly or through another package of this
// module, a layer of its own tier or above it.
func TestImportsRunOneWay(t *testing.T) {
	var order []string
	for _, tier := range layers {
		order = append(order, strings.Join(tier, " and "))
	}
	for i, tier := range layers[1:] {
		for _, pkg := range tier {
			forbidden := slices.Concat(layers[:i+2]...)
			seen := importsOf(t, pkg, func(imp string, via []string) {
				if imp != pkg && slices.Contains(forbidden, imp) {
					t.Errorf("%s imports %s (through %s): imports must run one way, %s",
						pkg, imp, strings.Join(via, " → "), strings.Join(order, " → "))
				}
			})
			if i+2 < len(layers) && !seen[layers[i+2][0]] {
				t.Errorf("the walk from %s never reached %s: it reads no imports", pkg, layers[i+2][0])
			}
		}
	}
}

// TestInternalNeverImportsTheRoot fails when a package of this module under internal/ imports
// the root package, directly or through another package of the module: the root builds the
// internal packages, never the reverse. Directories holding modules of their own (the cluster
// suites, the release check) are other modules and are skipped.
func TestInternalNeverImportsTheRoot(t *testing.T) {
	root := filepath.Join("..", "..", "internal")
	packages := 0
	err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if dir != root {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if _, err := build.ImportDir(dir, 0); err != nil {
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(filepath.Join("..", ".."), dir)
		if err != nil {
			return err
		}
		pkg := module + "/" + filepath.ToSlash(rel)
		packages++
		importsOf(t, pkg, func(imp string, via []string) {
			if imp == module {
				t.Errorf("%s imports the root package %s (through %s)", pkg, module, strings.Join(via, " → "))
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if packages < 10 {
		t.Fatalf("found %d packages under internal/: the walk reads no directories", packages)
	}
}
