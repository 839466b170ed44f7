//go:build linux

package segment

import (
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing back bytes [off, off+n)
// of f: sync_file_range(SYNC_FILE_RANGE_WRITE), which queues the dirty
// pages of the range for writing and returns without waiting for them (it
// may wait for room in the device's queue). Files without a descriptor
// (in-memory file systems) are skipped.
func startWriteback(f vfs.File, off, n int64) error {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return nil
	}
	return unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
