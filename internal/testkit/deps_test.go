package testkit

import (
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
