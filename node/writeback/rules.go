package writeback

import "fmt"

// The assumptions of the stall rule; see the package doc.
const (
	AssumedDiskBytesPerSec = 200 << 20
	MaxThrottleDrainSec    = 10
	MaxBackgroundDrainSec  = 5
	MaxExpireCentisecs     = 3000
)

// Thresholds are the effective dirty thresholds in bytes.
type Thresholds struct {
	Background, Throttle int64
}

// Effective computes the thresholds from s for a machine of memTotal bytes:
// the _bytes form when set, else the ratio of memTotal (an upper bound:
// the kernel takes the ratio of dirtyable memory, at most MemTotal).
func Effective(s Settings, memTotal int64) Thresholds {
	pick := func(bytesName, ratioName string) int64 {
		if b := s[bytesName]; b > 0 {
			return b
		}
		return s[ratioName] * memTotal / 100
	}
	return Thresholds{
		Background: pick("dirty_background_bytes", "dirty_background_ratio"),
		Throttle:   pick("dirty_bytes", "dirty_ratio"),
	}
}

// Check returns one warning per rule of the package doc that s breaks on a
// machine of memTotal bytes; none when the settings are fine.
func Check(s Settings, memTotal int64) []string {
	var out []string
	th := Effective(s, memTotal)
	drain := func(b int64) float64 { return float64(b) / AssumedDiskBytesPerSec }
	if d := drain(th.Throttle); d > MaxThrottleDrainSec {
		out = append(out, fmt.Sprintf("writers are throttled only at %s dirty (vm.dirty_ratio=%d, vm.dirty_bytes=%d), about %.0fs of writeback at %d MiB/s: produce requests may stall for seconds; see `sluice tune writeback`",
			human(th.Throttle), s["dirty_ratio"], s["dirty_bytes"], d, AssumedDiskBytesPerSec>>20))
	}
	if d := drain(th.Background); d > MaxBackgroundDrainSec {
		out = append(out, fmt.Sprintf("background writeback starts only at %s dirty (vm.dirty_background_ratio=%d, vm.dirty_background_bytes=%d), about %.0fs of writeback: it will come in bursts; see `sluice tune writeback`",
			human(th.Background), s["dirty_background_ratio"], s["dirty_background_bytes"], d))
	}
	if e := s["dirty_expire_centisecs"]; e > MaxExpireCentisecs {
		out = append(out, fmt.Sprintf("vm.dirty_expire_centisecs=%d: acknowledged records of a quiet partition may stay unflushed for %ds; see `sluice tune writeback`", e, e/100))
	}
	return out
}

// Profiles are the names Recommend knows.
var Profiles = []string{"streaming"}

// Recommend returns the settings of profile for a machine of memTotal
// bytes; see the package doc.
func Recommend(profile string, memTotal int64) (Settings, error) {
	if profile != "streaming" {
		return nil, fmt.Errorf("writeback: unknown profile %q (known: %v)", profile, Profiles)
	}
	bg := clamp(memTotal/100, 64<<20, 256<<20) &^ (1<<20 - 1) // whole MiB
	return Settings{
		"dirty_background_ratio":    0,
		"dirty_background_bytes":    bg,
		"dirty_ratio":               0,
		"dirty_bytes":               clamp(4*bg, 256<<20, 1<<30),
		"dirty_expire_centisecs":    500,
		"dirty_writeback_centisecs": 100,
	}, nil
}

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }

// human formats a byte count in binary units.
func human(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}
