package writeback

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Names of the vm sysctls this package reads and sets, in the order they
// are shown and applied.
var Names = []string{
	"dirty_background_ratio",
	"dirty_background_bytes",
	"dirty_ratio",
	"dirty_bytes",
	"dirty_expire_centisecs",
	"dirty_writeback_centisecs",
}

// Settings are values of the vm.dirty_* sysctls, by name (without "vm.").
type Settings map[string]int64

// ErrNotLinux is returned when the proc root has no vm sysctls.
var ErrNotLinux = errors.New("writeback: no vm.dirty_* sysctls under the proc root (not Linux?)")

// vmDir is where the vm sysctls live under the proc root.
func vmDir(procRoot string) string { return filepath.Join(procRoot, "sys", "vm") }

// Read reads the vm.dirty_* sysctls under procRoot ("/proc").
func Read(procRoot string) (Settings, error) {
	s := Settings{}
	for _, name := range Names {
		b, err := os.ReadFile(filepath.Join(vmDir(procRoot), name))
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNotLinux
		}
		if err != nil {
			return nil, fmt.Errorf("writeback: %w", err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("writeback: vm.%s: %w", name, err)
		}
		s[name] = v
	}
	return s, nil
}

// Memory is what /proc/meminfo says about memory and the page cache, in bytes.
type Memory struct {
	Total, Available, Dirty, Writeback int64
}

// ReadMemory reads MemTotal, MemAvailable, Dirty and Writeback from
// procRoot/meminfo.
func ReadMemory(procRoot string) (Memory, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, "meminfo"))
	if err != nil {
		return Memory{}, fmt.Errorf("writeback: %w", err)
	}
	var m Memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "MemTotal":
			dst = &m.Total
		case "MemAvailable":
			dst = &m.Available
		case "Dirty":
			dst = &m.Dirty
		case "Writeback":
			dst = &m.Writeback
		default:
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("writeback: meminfo %s: %w", name, err)
		}
		if len(f) > 1 && f[1] == "kB" {
			v <<= 10
		}
		*dst = v
	}
	if m.Total == 0 {
		return Memory{}, fmt.Errorf("writeback: %s has no MemTotal", filepath.Join(procRoot, "meminfo"))
	}
	return m, nil
}

// Save writes s to path as JSON (0600), refusing to overwrite a file, so
// that the values before a first Apply are never lost to a second one.
func Save(path string, s Settings) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writeback: save previous values: %w (remove it or pick another --save file)", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("writeback: save previous values: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writeback: save previous values: %w", err)
	}
	return f.Close()
}

// Load reads a file written by Save.
func Load(path string) (Settings, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("writeback: %w", err)
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("writeback: %s is not a saved settings file: %w", path, err)
	}
	for name := range s {
		if !known(name) {
			return nil, fmt.Errorf("writeback: %s names vm.%s, which this tool does not set", path, name)
		}
	}
	return s, nil
}

func known(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// Apply writes s under procRoot. Of each ratio/bytes pair it writes only the
// form that is not zero (the kernel zeroes the other), the bytes form if
// both are; pairs absent from s are left alone. It needs root on a real
// machine.
func Apply(procRoot string, s Settings) error {
	for _, name := range effective(s) {
		p := filepath.Join(vmDir(procRoot), name)
		if err := os.WriteFile(p, []byte(strconv.FormatInt(s[name], 10)+"\n"), 0o644); err != nil {
			if errors.Is(err, os.ErrPermission) {
				return fmt.Errorf("writeback: set vm.%s: %w (run as root)", name, err)
			}
			return fmt.Errorf("writeback: set vm.%s: %w", name, err)
		}
		if err := zeroTwin(procRoot, name); err != nil {
			return err
		}
	}
	return nil
}

// zeroTwin makes the other form of a ratio/bytes pair read 0 after name was
// written, as the kernel does by itself (which is why it is written only
// when it does not already read 0: the kernel refuses dirty_bytes=0).
func zeroTwin(procRoot, name string) error {
	twin, ok := ratioTwin(name)
	if !ok {
		base, isBytes := strings.CutSuffix(name, "_bytes")
		if !isBytes {
			return nil
		}
		twin = base + "_ratio"
	}
	p := filepath.Join(vmDir(procRoot), twin)
	b, err := os.ReadFile(p)
	if err != nil || strings.TrimSpace(string(b)) == "0" {
		return nil
	}
	if err := os.WriteFile(p, []byte("0\n"), 0o644); err != nil {
		return fmt.Errorf("writeback: set vm.%s: %w", twin, err)
	}
	return nil
}

// effective lists the names Apply writes for s, in Names order.
func effective(s Settings) []string {
	var out []string
	for _, name := range Names {
		v, ok := s[name]
		if !ok {
			continue
		}
		if twin, isRatio := ratioTwin(name); isRatio {
			if tv, ok := s[twin]; ok && tv != 0 {
				continue // the bytes form wins
			}
		} else if strings.HasSuffix(name, "_bytes") && v == 0 {
			if _, ok := s[strings.TrimSuffix(name, "_bytes")+"_ratio"]; ok {
				continue // zero bytes: the ratio form is the one in use
			}
		}
		out = append(out, name)
	}
	return out
}

// ratioTwin returns the _bytes name of a _ratio sysctl.
func ratioTwin(name string) (string, bool) {
	if base, ok := strings.CutSuffix(name, "_ratio"); ok {
		return base + "_bytes", true
	}
	return "", false
}
