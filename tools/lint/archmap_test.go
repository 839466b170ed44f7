package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// mapRow is a row of ARCHITECTURE.md's package map: "| `pkg/` | ...".
var mapRow = regexp.MustCompile("(?m)^\\| `([a-z0-9/]+?)/?` \\|")

// TestArchitectureMap: ARCHITECTURE.md's package map names every package
// of the tree (a directory with non-test Go files; go list ./... shows the
// same, but for build-tagged ones such as tools/internal/pin) and nothing
// else, so a newcomer's map is never out of date.
func TestArchitectureMap(t *testing.T) {
	var tree []string
	for _, f := range repoFiles(t) {
		if dir := filepath.ToSlash(filepath.Dir(f.path)); !strings.HasSuffix(f.path, "_test.go") && !slices.Contains(tree, dir) {
			tree = append(tree, dir)
		}
	}
	md, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range mapRow.FindAllSubmatch(md, -1) {
		listed = append(listed, string(m[1]))
	}
	if len(listed) == 0 {
		t.Fatal("ARCHITECTURE.md has no package map rows (| `pkg/` | ... |)")
	}
	for _, p := range tree {
		if !slices.Contains(listed, p) {
			t.Errorf("package %s is missing from ARCHITECTURE.md's package map", p)
		}
	}
	seen := map[string]bool{}
	for _, p := range listed {
		if seen[p] {
			t.Errorf("ARCHITECTURE.md's package map lists %s twice (a merge that kept both sides?)", p)
		}
		seen[p] = true
		if !slices.Contains(tree, p) {
			t.Errorf("ARCHITECTURE.md's package map lists %s, which is not a package of the tree", p)
		}
	}
}

// conflictMarker is the first line of a merge conflict git left in a file.
var conflictMarker = regexp.MustCompile("(?m)^(<<<<<<<|>>>>>>>) ")

// TestNoConflictMarkers: no Go file, Markdown file or the Makefile holds
// a merge conflict's markers. A merge once committed them, with both
// sides, into ARCHITECTURE.md, and every other test still passed.
func TestNoConflictMarkers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".md") && name != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := conflictMarker.FindIndex(b); loc != nil {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s:%d: a merge conflict's marker", rel, 1+strings.Count(string(b[:loc[0]]), "\n"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
