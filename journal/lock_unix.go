//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive advisory lock (flock) on the data directory
// itself, so that two journals (two daemons) never write the same
// directory. Locking the directory rather than a file in it means nothing
// can be deleted out from under the lock: removing the directory entry of
// a lock file would let a second daemon in, removing the directory itself
// leaves the first daemon nothing to share. Format 1 used a DIR/LOCK file;
// one left behind is ignored.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: opening %s to lock it: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("journal: %s is in use by another journal (the directory is locked)", dir)
		}
		return nil, fmt.Errorf("journal: locking %s: %w", dir, err)
	}
	return f, nil
}

// unlockDir releases the lock taken by lockDir.
func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close() // closing the descriptor drops the flock
}
