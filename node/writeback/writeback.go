// Package writeback reads and sets the Linux page-cache writeback sysctls
// (vm.dirty_*) and reads the page cache's dirty and writeback sizes from
// /proc/meminfo, for the node (which exports them and warns at start) and
// for `sluice tune writeback`.
//
// Every function takes the proc root ("/proc" on a real machine) as a
// parameter, so tests run against a temporary directory and never touch the
// machine's settings.
//
// # Why the settings matter to Sluice
//
// Sluice acknowledges a produce once the bytes are in the page cache of the
// in-sync replicas (unless the topic asks for fsync); the kernel writes them
// back later. Two thresholds govern that:
//
//   - dirty_background_ratio / dirty_background_bytes: when this much memory
//     is dirty, the flusher threads start writing back in the background.
//   - dirty_ratio / dirty_bytes: when this much is dirty, a process that
//     writes is throttled (balance_dirty_pages) until writeback catches up:
//     a produce stalls for as long as the disk needs to drain the excess.
//
// The ratios are percentages of the memory the kernel considers dirtyable
// (at most MemTotal); setting a _bytes form zeroes its _ratio twin and back.
// dirty_expire_centisecs is how old dirty data must be before the flusher
// writes it regardless of the thresholds (bounding how long acknowledged
// data of a quiet partition stays unflushed), dirty_writeback_centisecs how
// often the flusher wakes up.
//
// The defaults (20 % and 10 %, 30 s expiry) were chosen for desktops. On a
// 64 GiB broker they let 12.8 GiB pile up before throttling: at a disk
// writing 200 MiB/s that is over a minute of writeback, during which every
// producer of the machine stalls, and 6.4 GiB accumulates before background
// writeback even starts, so it comes in bursts.
//
// # The stall rule (Check)
//
// Check assumes a sustained disk write rate of AssumedDiskBytesPerSec
// (200 MiB/s, a modest SSD or a RAID of disks) and warns when
//
//   - the throttle threshold (dirty_bytes, else dirty_ratio % of MemTotal)
//     would take more than MaxThrottleDrain (10 s) to write back: writers
//     that reach it stall for seconds;
//   - the background threshold would take more than MaxBackgroundDrain (5 s)
//     to write back: writeback starts late and comes in bursts;
//   - dirty_expire_centisecs is above 30 s: acknowledged data of a quiet
//     partition may stay unflushed that long (plus one writeback period).
//
// # The streaming profile (Recommend)
//
// Start writeback early and keep it steady, throttle late enough that a
// healthy disk never lets writers reach the limit, and bound the age of
// dirty data: dirty_background_bytes = 1 % of MemTotal clamped to
// [64 MiB, 256 MiB]; dirty_bytes = 4 × that clamped to [256 MiB, 1 GiB]
// (at most about 5 s of writeback at the assumed rate);
// dirty_expire_centisecs = 500 (5 s); dirty_writeback_centisecs = 100 (1 s).
// The _bytes forms are used so that the profile does not scale with memory
// size past the clamps. Apply writes them (after saving the current values
// with Save), Restore writes a saved file back.
package writeback
