//go:build linux

package journal

import (
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync): on a preallocated segment, whose size and block map do not
// change, that is the data alone, with no filesystem journal commit.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// openDataSync opens path for writes that return once their data is
// durable (O_DSYNC): the kernel flushes the written range only, as
// fdatasync would for the whole file.
func openDataSync(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_DSYNC, 0)
}
