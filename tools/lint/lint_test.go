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

// layers is the import order of ARCHITECTURE.md: segment, partition and
// quorum are leaves, node/ is built on them and tools/ on node/. A package
// (tests included) may import its own layer or a lower one, never a higher.
var layers = map[string]int{"segment": 0, "partition": 0, "quorum": 0, "node": 1, "tools": 2}

const module = "github.com/sluice-log/sluice/"

// TestNoUpwardImports fails when a lower layer imports a higher one (node/
// importing tools/, say): commands and test harnesses live above the
// library, which takes filesystems and transports as options instead.
func TestNoUpwardImports(t *testing.T) {
	for _, f := range repoFiles(t) {
		if upward := upwardImports(f); len(upward) > 0 {
			t.Errorf("%s imports a higher layer: %s", f.path, strings.Join(upward, ", "))
		}
	}
}

// upwardImports lists the imports of f that sit above f's own layer.
func upwardImports(f goFile) []string {
	top, _, _ := strings.Cut(filepath.ToSlash(f.path), "/")
	own, ok := layers[top]
	if !ok {
		return nil
	}
	var out []string
	for _, imp := range f.ast.Imports {
		p := strings.Trim(imp.Path.Value, `"`)
		rest, ok := strings.CutPrefix(p, module)
		if !ok {
			continue
		}
		dep, _, _ := strings.Cut(rest, "/")
		if l, ok := layers[dep]; ok && l > own {
			out = append(out, p)
		}
	}
	return out
}

// TestUpwardImportsCheckerFails feeds the checker a node/ file that
// imports tools/, the defect it exists to catch.
func TestUpwardImportsCheckerFails(t *testing.T) {
	src := "package node\n\nimport _ \"" + module + "tools/soak/powerfs\"\n"
	f, err := parser.ParseFile(token.NewFileSet(), "command.go", src, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	if got := upwardImports(goFile{path: "node/command.go", ast: f}); len(got) != 1 {
		t.Fatalf("node/ importing tools/: got %v, want it reported", got)
	}
	if got := upwardImports(goFile{path: "tools/x/x.go", ast: f}); len(got) != 0 {
		t.Fatalf("tools/ importing tools/: got %v, want nothing", got)
	}
}
