//go:build linux

package journal

import (
	"os"
	"syscall"
)

// The flags of sync_file_range(2).
const (
	syncFileRangeWaitBefore = 1
	syncFileRangeWrite      = 2
	syncFileRangeWaitAfter  = 4
)

// startWriteback starts writing back n bytes of f at off without waiting.
func startWriteback(f *os.File, off, n int64) bool {
	return syncFileRange(f, off, n, syncFileRangeWrite)
}

// awaitWriteback returns once n bytes of f at off are written back (not
// flushed from the disk's cache: only fsync does that).
func awaitWriteback(f *os.File, off, n int64) bool {
	if n == 0 {
		return true
	}
	return syncFileRange(f, off, n, syncFileRangeWaitBefore|syncFileRangeWrite|syncFileRangeWaitAfter)
}

func syncFileRange(f *os.File, off, n int64, flags int) bool {
	for {
		err := syscall.SyncFileRange(int(f.Fd()), off, n, flags)
		if err != syscall.EINTR {
			return err == nil
		}
	}
}
