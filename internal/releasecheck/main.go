// Command releasecheck writes a file-based module proxy holding every module of this repository
// at one version, as a release would publish them, so that a fresh program outside the
// repository can resolve them with GOPROXY=file://DIR and no replace directive.
//
//	go run . -repo ../.. -out /some/dir -version v0.3.0
//
// For each go.mod of the repository it writes DIR/<module>/@v/{list,VERSION.info,VERSION.mod,
// VERSION.zip} in the layout the go command reads (GOPROXY protocol). The zips are made by
// golang.org/x/mod/zip from the module's directory, which leaves out nested modules and
// vendor directories as the go command does. It prints one line per module: its path and
// whether it is public (a program outside the repository may import it) or test-only (under
// internal/, or a module of examples, benchmarks or browser tests).
//
//	go run . -repo ../.. -imports
//
// checks instead that no module outside internal/ imports another module's internal packages,
// in its code or its tests (imports.go says why).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// testOnly lists the modules, by directory, that exist for this repository's own tests and
// tools; everything else is public.
var testOnly = map[string]bool{
	"bench":              true,
	"examples":           true,
	"status/browsertest": true,
}

func main() {
	repo := flag.String("repo", ".", "root of the repository checkout")
	out := flag.String("out", "", "directory to write the module proxy into (created)")
	version := flag.String("version", "", "the version every module is published at, e.g. v0.3.0")
	imports := flag.Bool("imports", false, "instead, check that no module outside internal/ imports another module's internal packages")
	flag.Parse()
	if *imports {
		dirs, err := moduleDirs(*repo)
		if err == nil {
			err = checkImports(*repo, dirs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "releasecheck:", err)
			os.Exit(1)
		}
		return
	}
	if *out == "" || !strings.HasPrefix(*version, "v") {
		fmt.Fprintln(os.Stderr, "releasecheck: -out and -version (vX.Y.Z) are required")
		os.Exit(2)
	}
	if err := run(*repo, *out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "releasecheck:", err)
		os.Exit(1)
	}
}

func run(repo, out, version string) error {
	dirs, err := moduleDirs(repo)
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(repo, dir, "go.mod"))
		if err != nil {
			return err
		}
		path, err := modulePath(repo, dir)
		if err != nil {
			return err
		}
		mv := module.Version{Path: path, Version: version}
		esc, err := module.EscapePath(mv.Path)
		if err != nil {
			return err
		}
		at := filepath.Join(out, filepath.FromSlash(esc), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(at, "list"), []byte(version+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(at, version+".info"), info, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(at, version+".mod"), data, 0o644); err != nil {
			return err
		}
		if err := writeZip(filepath.Join(at, version+".zip"), mv, filepath.Join(repo, dir)); err != nil {
			return fmt.Errorf("%s: %w", mv.Path, err)
		}
		kind := "public"
		if dir == "internal" || strings.HasPrefix(dir, "internal/") || testOnly[dir] {
			kind = "test-only"
		}
		fmt.Printf("%s %s %s\n", mv.Path, dir, kind)
	}
	return nil
}

// modulePath returns the path of the module whose go.mod is in dir, relative to repo.
func modulePath(repo, dir string) (string, error) {
	name := filepath.Join(repo, filepath.FromSlash(dir), "go.mod")
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	mf, err := modfile.ParseLax(name, data, nil)
	if err != nil {
		return "", err
	}
	if mf.Module == nil {
		return "", fmt.Errorf("%s: no module line", name)
	}
	return mf.Module.Mod.Path, nil
}

func writeZip(name string, mv module.Version, dir string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := modzip.CreateFromDir(f, mv, dir); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// moduleDirs returns the directories, relative to repo and slash-separated, that hold a
// go.mod, the root's as ".". Hidden directories (.git, .ci) and testdata are skipped, as the
// go command skips them.
func moduleDirs(repo string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(repo, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repo && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			rel, err := filepath.Rel(repo, filepath.Dir(path))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}
