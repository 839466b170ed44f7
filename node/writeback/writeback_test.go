package writeback

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTree(t *testing.T, vm map[string]string, meminfo string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "sys", "vm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range vm {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "meminfo"), []byte(meminfo), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

var kernelDefaults = map[string]string{"dirty_background_ratio": "10", "dirty_background_bytes": "0", "dirty_ratio": "20",
	"dirty_bytes": "0", "dirty_expire_centisecs": "3000", "dirty_writeback_centisecs": "500"}

func TestReadAndMemory(t *testing.T) {
	root := writeTree(t, kernelDefaults, "MemTotal:       16384 kB\nMemAvailable:    8192 kB\nDirty:  12 kB\nWriteback:  3 kB\nHugePages_Total: 0\n")
	s, err := Read(root)
	if err != nil {
		t.Fatal(err)
	}
	if s["dirty_ratio"] != 20 || s["dirty_expire_centisecs"] != 3000 || len(s) != len(Names) {
		t.Fatalf("Read: %v", s)
	}
	m, err := ReadMemory(root)
	if err != nil {
		t.Fatal(err)
	}
	if m != (Memory{Total: 16 << 20, Available: 8 << 20, Dirty: 12 << 10, Writeback: 3 << 10}) {
		t.Fatalf("ReadMemory: %+v", m)
	}
	if _, err := Read(t.TempDir()); err != ErrNotLinux {
		t.Fatalf("Read of an empty tree: %v, want ErrNotLinux", err)
	}
}

// TestCheck: the kernel defaults on a 64 GiB machine break the throttle
// and background rules, not the expiry one; on a 4 GiB machine none; the
// _bytes forms take precedence over the ratios; a long expiry warns.
func TestCheck(t *testing.T) {
	def := Settings{"dirty_background_ratio": 10, "dirty_ratio": 20, "dirty_expire_centisecs": 3000, "dirty_writeback_centisecs": 500}
	w := Check(def, 64<<30)
	if len(w) != 2 || !strings.Contains(w[0], "throttled only at 12.8 GiB") || !strings.Contains(w[1], "background writeback starts only at 6.4 GiB") {
		t.Fatalf("64 GiB defaults: %q", w)
	}
	if w := Check(def, 4<<30); len(w) != 0 {
		t.Fatalf("4 GiB defaults: %q", w)
	}
	bytesForm := Settings{"dirty_background_ratio": 0, "dirty_background_bytes": 64 << 20, "dirty_ratio": 0, "dirty_bytes": 256 << 20, "dirty_expire_centisecs": 6000}
	if th := Effective(bytesForm, 64<<30); th != (Thresholds{Background: 64 << 20, Throttle: 256 << 20}) {
		t.Fatalf("Effective: %+v", th)
	}
	if w := Check(bytesForm, 64<<30); len(w) != 1 || !strings.Contains(w[0], "unflushed for 60s") {
		t.Fatalf("long expiry: %q", w)
	}
	for _, mem := range []int64{1 << 30, 8 << 30, 64 << 30, 1 << 40} {
		rec, err := Recommend("streaming", mem)
		if err != nil {
			t.Fatal(err)
		}
		if w := Check(rec, mem); len(w) != 0 {
			t.Errorf("the streaming profile breaks its rules at %d GiB: %q", mem>>30, w)
		}
		if th := Effective(rec, mem); th.Background >= th.Throttle {
			t.Errorf("at %d GiB: background %d not below throttle %d", mem>>30, th.Background, th.Throttle)
		}
	}
	if _, err := Recommend("desktop", 1<<30); err == nil {
		t.Error("an unknown profile was accepted")
	}
}

// TestApplyPairs: of a ratio/bytes pair only the form in use is written,
// and its twin reads 0 afterwards, as the kernel makes it.
func TestApplyPairs(t *testing.T) {
	root := writeTree(t, kernelDefaults, "MemTotal: 1024 kB\n")
	if err := Apply(root, Settings{"dirty_bytes": 1 << 28, "dirty_ratio": 0}); err != nil {
		t.Fatal(err)
	}
	s, _ := Read(root)
	if s["dirty_bytes"] != 1<<28 || s["dirty_ratio"] != 0 || s["dirty_background_ratio"] != 10 {
		t.Fatalf("after setting dirty_bytes: %v", s)
	}
	if err := Apply(root, Settings{"dirty_bytes": 0, "dirty_ratio": 15}); err != nil {
		t.Fatal(err)
	}
	if s, _ = Read(root); s["dirty_bytes"] != 0 || s["dirty_ratio"] != 15 {
		t.Fatalf("after setting dirty_ratio back: %v", s)
	}
}

func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "saved.json")
	want := Settings{"dirty_ratio": 20, "dirty_expire_centisecs": 3000}
	if err := Save(path, want); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, want); err == nil {
		t.Fatal("Save overwrote a saved file")
	}
	got, err := Load(path)
	if err != nil || len(got) != 2 || got["dirty_ratio"] != 20 {
		t.Fatalf("Load: %v %v", got, err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"swappiness": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "vm.swappiness") {
		t.Fatalf("Load of a file naming another sysctl: %v", err)
	}
}
