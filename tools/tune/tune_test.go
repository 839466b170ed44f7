package tune

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-log/sluice/node/writeback"
)

// fakeProc writes a proc tree with the kernel's default writeback settings
// and a 64 GiB machine.
func fakeProc(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	vm := filepath.Join(root, "sys", "vm")
	if err := os.MkdirAll(vm, 0o755); err != nil {
		t.Fatal(err)
	}
	defaults := map[string]string{
		"dirty_background_ratio": "10", "dirty_background_bytes": "0", "dirty_ratio": "20", "dirty_bytes": "0",
		"dirty_expire_centisecs": "3000", "dirty_writeback_centisecs": "500",
	}
	for name, v := range defaults {
		if err := os.WriteFile(filepath.Join(vm, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	meminfo := "MemTotal:       67108864 kB\nMemFree:  1000 kB\nMemAvailable:   60000000 kB\nDirty:             2048 kB\nWriteback:           0 kB\n"
	if err := os.WriteFile(filepath.Join(root, "meminfo"), []byte(meminfo), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestTuneWritebackRoundTrip: show, apply (saving), restore, against a fake
// /proc: the applied values are the profile's, the restored ones the
// originals, and the saved file is not overwritten by a second apply.
func TestTuneWritebackRoundTrip(t *testing.T) {
	root := fakeProc(t)
	before, err := writeback.Read(root)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "writeback", "--proc", root)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vm.dirty_ratio", "20", "warning:", "throttled only at 12.8 GiB", "60-sluice.conf"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	after, _ := writeback.Read(root)
	if !equal(after, before) {
		t.Fatalf("showing changed the settings: %v -> %v", before, after)
	}

	save := filepath.Join(t.TempDir(), "saved.json")
	if out, err = run(t, "writeback", "--proc", root, "--apply", "--save", save); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	applied, _ := writeback.Read(root)
	rec, _ := writeback.Recommend("streaming", 64<<30)
	if !equal(applied, rec) {
		t.Fatalf("applied %v, want %v", applied, rec)
	}
	if w := writeback.Check(applied, 64<<30); len(w) != 0 {
		t.Errorf("the streaming profile breaks its own rules: %v", w)
	}
	if _, err := run(t, "writeback", "--proc", root, "--apply", "--save", save); err == nil {
		t.Fatal("a second apply overwrote the saved file")
	}

	if out, err = run(t, "writeback", "--proc", root, "--restore", save); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	restored, _ := writeback.Read(root)
	if !equal(restored, before) {
		t.Fatalf("restored %v, want %v", restored, before)
	}
}

// TestNeedRoot: writing the real /proc needs root; a fake tree does not.
// (The check is tested as a function: running the command against the
// real /proc could change the machine if the check were broken.)
func TestNeedRoot(t *testing.T) {
	if err := needRoot("/proc", 1000); err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("non-root on /proc: %v", err)
	}
	if err := needRoot("/proc", 0); err != nil {
		t.Errorf("root on /proc: %v", err)
	}
	if err := needRoot(t.TempDir(), 1000); err != nil {
		t.Errorf("non-root on a fake tree: %v", err)
	}
}

func equal(a, b writeback.Settings) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
