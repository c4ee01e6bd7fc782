package testkit

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layers are the packages whose imports run one way, from the top down: each may import the
// ones below it, never one above it (internal/physical's and internal/logical's doc.go say why).
// The test lives here, in a package that imports none of them, so that it still runs when a
// wrong import makes a cycle that stops the layers from building.
var layers = []string{
	"github.com/lbd-go/lbd",
	"github.com/lbd-go/lbd/internal/logical",
	"github.com/lbd-go/lbd/internal/physical",
	"github.com/lbd-go/lbd/internal/nodetable",
	"github.com/lbd-go/lbd/internal/pick",
}

// TestImportsRunOneWay fails when a layer imports, directly or through another package of this
// module, a layer above it.
func TestImportsRunOneWay(t *testing.T) {
	const module = "github.com/lbd-go/lbd"
	for i, pkg := range layers[1:] {
		above := layers[:i+1]
		seen := map[string]bool{}
		var walk func(path string, via []string)
		walk = func(path string, via []string) {
			if seen[path] {
				return
			}
			seen[path] = true
			dir := filepath.Join("..", "..", filepath.FromSlash(strings.TrimPrefix(path, module)))
			p, err := build.ImportDir(dir, 0)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, imp := range p.Imports {
				if slices.Contains(above, imp) {
					t.Errorf("%s imports %s (through %s): imports must run one way, %s",
						pkg, imp, strings.Join(append(via, path), " → "), strings.Join(layers, " → "))
				}
				if strings.HasPrefix(imp, module+"/") {
					walk(imp, append(via, path))
				}
			}
		}
		walk(pkg, nil)
		if below := layers[i+2:]; len(below) > 0 && !seen[below[0]] {
			t.Errorf("the walk from %s never reached %s: it reads no imports", pkg, below[0])
		}
	}
}
