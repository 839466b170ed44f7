//go:build linux

package segment

import (
	"errors"
	"os"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"
)

// cachestatUnsupported is set once the kernel has refused cachestat(2)
// (ENOSYS before Linux 6.5; EPERM from a seccomp filter that does not know
// it): no log asks again.
var cachestatUnsupported atomic.Bool

var pageSize = int64(os.Getpagesize())

// pagesNotWritten asks the kernel how many page-cache pages of f over
// [off, end) are dirty or under writeback (cachestat(2)), in bytes, at most
// end-off. off is rounded down to a page: the page it falls in may have been
// written to after the fsync that ended at off.
func pagesNotWritten(f vfs.File, off, end int64) (int64, error) {
	fd := f.Fd()
	if fd == vfs.InvalidFd {
		return 0, ErrUnwrittenUnsupported
	}
	start := off - off%pageSize
	var cs unix.Cachestat_t
	err := unix.Cachestat(uint(fd), &unix.CachestatRange{Off: uint64(start), Len: uint64(end - start)}, &cs, 0)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		cachestatUnsupported.Store(true)
		return 0, ErrUnwrittenUnsupported
	}
	if errors.Is(err, unix.EOPNOTSUPP) { // hugetlbfs
		return 0, ErrUnwrittenUnsupported
	}
	if err != nil {
		return 0, err
	}
	// A page redirtied while under writeback is counted in both.
	pages := int64(min(cs.Dirty+cs.Writeback, cs.Cache))
	return min(pages*pageSize, end-off), nil
}
