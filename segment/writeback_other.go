//go:build !linux

package segment

import "github.com/cockroachdb/pebble/v2/vfs"

// startWriteback does nothing: batched writeback uses sync_file_range,
// which only Linux has; elsewhere the kernel writes back on its own.
func startWriteback(vfs.File, int64, int64) error { return nil }
