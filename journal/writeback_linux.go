//go:build linux

package journal

import (
	"errors"
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
func startWriteback(f *os.File, off, n int64) error {
	return syncFileRange(f, off, n, syncFileRangeWrite)
}

// awaitWriteback returns once n bytes of f at off are written back (not
// flushed from the disk's cache: only fsync does that). An error of the
// file's writeback is reported here, and then no longer by fsync on the
// same descriptor (the kernel reports it once per open file).
func awaitWriteback(f *os.File, off, n int64) error {
	if n == 0 {
		return nil
	}
	return syncFileRange(f, off, n, syncFileRangeWaitBefore|syncFileRangeWrite|syncFileRangeWaitAfter)
}

func syncFileRange(f *os.File, off, n int64, flags int) error {
	for {
		err := syscall.SyncFileRange(int(f.Fd()), off, n, flags)
		if err != syscall.EINTR {
			if err != nil {
				return &os.SyscallError{Syscall: "sync_file_range", Err: err}
			}
			return nil
		}
	}
}

// errNoPacing is never returned here: sync_file_range exists.
var errNoPacing = errors.New("writeback pacing is not available on this system")
