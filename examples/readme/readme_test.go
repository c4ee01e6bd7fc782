// Package readme holds the complete programs the README shows; this test keeps each one
// identical to its copy on the page, so what a reader copies is what the build compiles.
package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// A Go block of the README that starts with the path of its file.
var block = regexp.MustCompile("(?s)```go\n(// (examples/readme/[a-z]+/main\\.go)[^\n]*\n.*?)```\n")

func TestREADMEProgramsAreTheFiles(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, m := range block.FindAllSubmatch(readme, -1) {
		path := string(m[2])
		shown[path] = true
		file, err := os.ReadFile(filepath.Join("../..", path))
		if err != nil {
			t.Errorf("README shows %s, which does not exist: %v", path, err)
			continue
		}
		if string(file) != string(m[1]) {
			t.Errorf("README's copy of %s differs from the file: copy the file into the README", path)
		}
	}
	files, err := filepath.Glob("*/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no program under examples/readme")
	}
	for _, f := range files {
		if path := "examples/readme/" + filepath.ToSlash(f); !shown[path] {
			t.Errorf("README does not show %s", path)
		}
	}
}
