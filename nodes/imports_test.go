package nodes_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rootPackage is the import path of the module's root package, which node sources must not
// import: the root imports the sources' interface (this package), not the other way round, as
// gRPC's resolvers never import grpc.
const rootPackage = "github.com/lbd-go/lbd"

// Every package under nodes/ reaches the root package through none of its imports, direct or
// through another of the module's packages. Test files are left out: a source's tests may
// drive a Connector. Every build-constrained file counts, whatever the platform running this.
func TestNoPackageUnderNodesImportsTheRoot(t *testing.T) {
	moduleDir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(moduleDir, "go.mod")); err != nil {
		t.Fatalf("nodes/ is not at the top of the module: %v", err)
	}
	imports := func(pkg string) []string { // the module's packages pkg imports, from its non-test files
		dir := filepath.Join(moduleDir, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(pkg, rootPackage), "/")))
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range f.Imports {
				path, _ := strconv.Unquote(spec.Path.Value)
				if path == rootPackage || strings.HasPrefix(path, rootPackage+"/") {
					out = append(out, path)
				}
			}
		}
		return out
	}

	var packages []string
	err = filepath.WalkDir(filepath.Join(moduleDir, "nodes"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(moduleDir, path)
		if err != nil {
			return err
		}
		packages = append(packages, rootPackage+"/"+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(packages) < 5 {
		t.Fatalf("found only %v under nodes/: the walk is broken", packages)
	}

	for _, start := range packages {
		// via[p] is the package that brought p in, to print the chain that reaches the root.
		via := map[string]string{start: ""}
		queue := []string{start}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, imp := range imports(p) {
				if _, seen := via[imp]; seen {
					continue
				}
				via[imp] = p
				if imp == rootPackage {
					chain := []string{imp}
					for q := p; q != ""; q = via[q] {
						chain = append([]string{q}, chain...)
					}
					t.Errorf("%s imports the root package: %s; move what it needs into nodes (or an internal package) instead",
						start, strings.Join(chain, " -> "))
					queue = nil
					break
				}
				queue = append(queue, imp)
			}
		}
	}
}
