//go:build !linux

package segment

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// cachestatUnsupported is always set: only Linux has cachestat(2).
var cachestatUnsupported atomic.Bool

func init() { cachestatUnsupported.Store(true) }

func pagesNotWritten(vfs.File, int64, int64) (int64, error) { return 0, ErrUnwrittenUnsupported }
