package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is STYLE.md's "a file past ~1,000 lines is a design smell".
const maxLines = 1000

// allowSleep marks the rare line where a sleep is the behaviour under test
// (never synchronisation); it must say why on the same line.
const allowSleep = "lint:allow-sleep"

type goFile struct {
	path string
	src  []byte
	ast  *ast.File
}

func repoFiles(t *testing.T) []goFile {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var files []goFile
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, goFile{path: rel, src: src, ast: f})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("found no Go files: is the test running inside the repository?")
	}
	return files
}

// TestPackageDocs: every package says what it is for (STYLE.md rule 11).
func TestPackageDocs(t *testing.T) {
	documented := map[string]bool{}
	for _, f := range repoFiles(t) {
		if strings.HasSuffix(f.path, "_test.go") {
			continue
		}
		dir := filepath.Dir(f.path)
		if _, ok := documented[dir]; !ok {
			documented[dir] = false
		}
		if f.ast.Doc != nil && strings.TrimSpace(f.ast.Doc.Text()) != "" {
			documented[dir] = true
		}
	}
	for dir, ok := range documented {
		if !ok {
			t.Errorf("package in %s has no package doc comment", dir)
		}
	}
}

// TestFileLength keeps files small enough to read (STYLE.md rule 12).
func TestFileLength(t *testing.T) {
	for _, f := range repoFiles(t) {
		if n := strings.Count(string(f.src), "\n"); n > maxLines {
			t.Errorf("%s has %d lines (limit %d): split it by concern", f.path, n, maxLines)
		}
	}
}

// TestNoSleeps: time enters state machines as ticks or an injected clock, and
// tests wait on conditions with deadlines, never on sleeps.
func TestNoSleeps(t *testing.T) {
	for _, f := range repoFiles(t) {
		lines := strings.Split(string(f.src), "\n")
		ast.Inspect(f.ast, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Sleep" {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); !ok || id.Name != "time" {
				return true
			}
			line := lineOf(f.src, int(sel.Pos())-int(f.ast.FileStart))
			if line-1 < len(lines) && strings.Contains(lines[line-1], allowSleep) {
				return true
			}
			t.Errorf("%s:%d: time.Sleep; wait on a condition (or mark %q with the reason)", f.path, line, allowSleep)
			return true
		})
	}
}

func lineOf(src []byte, off int) int {
	return strings.Count(string(src[:off]), "\n") + 1
}
