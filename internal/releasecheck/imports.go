package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// The import rule: a module's packages and their tests import no internal package of another
// module. An internal package is an unexported API; a module released on its own that imports
// one of another module's is tied to that module's exact code, and the go command lets it only
// because lbd's module paths nest. The test-only modules under the root's internal/ tree
// (cluster suites, end-to-end tests, this check) are never published and are exempt: they live
// there to use the root's internal test helpers.

// listed is what `go list -json` says of one package, as far as the rule needs.
type listed struct {
	ImportPath string
	Module     *struct{ Path string }
	Imports    []string
	Error      *struct{ Err string }
}

// checkImports lists, for every module of repo outside internal/, its packages with their
// tests and dependencies (`go list -e -deps -test` in the module's directory, in the
// repository's workspace so that each module sees the others as they are in the checkout), and
// returns an error naming every import that breaks the rule, or every package the go command
// could not load.
func checkImports(repo string, dirs []string) error {
	work, err := filepath.Abs(filepath.Join(repo, "go.work"))
	if err != nil {
		return err
	}
	var problems []string
	for _, dir := range dirs {
		if exempt(dir) {
			continue
		}
		cmd := exec.Command("go", "list", "-e", "-deps", "-test", "-json=ImportPath,Module,Imports,Error", "./...")
		cmd.Dir = filepath.Join(repo, filepath.FromSlash(dir))
		cmd.Env = append(os.Environ(), "GOWORK="+work, "GOFLAGS=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go list in %s: %v\n%s", dir, err, stderr.Bytes())
		}
		pkgs, err := decodeListed(out)
		if err != nil {
			return fmt.Errorf("go list in %s: %w", dir, err)
		}
		mod, err := modulePath(repo, dir)
		if err != nil {
			return err
		}
		problems = append(problems, violations(mod, pkgs)...)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d imports of another module's internal packages (move the test to a "+
			"test-only module under internal/, or use a public API):\n\t%s",
			len(problems), strings.Join(problems, "\n\t"))
	}
	return nil
}

// exempt reports whether the module in dir may import other modules' internal packages: the
// test-only modules under the root's internal/ tree.
func exempt(dir string) bool { return dir == "internal" || strings.HasPrefix(dir, "internal/") }

// decodeListed reads the stream of JSON objects `go list -json` prints.
func decodeListed(data []byte) ([]listed, error) {
	var pkgs []listed
	d := json.NewDecoder(bytes.NewReader(data))
	for {
		var p listed
		if err := d.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// violations returns, for the packages of module mod among pkgs (one module's `go list -deps
// -test` listing: its packages, their test variants, and every dependency), each import of an
// internal package of another module, and each package of mod that did not load. A test
// variant's name, "p [p.test]", names p and the test it is built for.
func violations(mod string, pkgs []listed) []string {
	moduleOf := map[string]string{}
	for _, p := range pkgs {
		if p.Module != nil {
			moduleOf[p.ImportPath] = p.Module.Path
		}
	}
	var out []string
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path != mod {
			continue
		}
		if p.Error != nil {
			out = append(out, fmt.Sprintf("%s: %s", p.ImportPath, p.Error.Err))
		}
		for _, imp := range p.Imports {
			other := moduleOf[imp]
			path, _, _ := strings.Cut(imp, " ")
			if other != "" && other != mod && isInternal(path) {
				out = append(out, fmt.Sprintf("%s (module %s) imports %s (module %s)", p.ImportPath, mod, path, other))
			}
		}
	}
	sort.Strings(out)
	return out
}

// isInternal reports whether path has an element "internal", which the go command keeps for
// the tree it is in.
func isInternal(path string) bool {
	for elem := range strings.SplitSeq(path, "/") {
		if elem == "internal" {
			return true
		}
	}
	return false
}
