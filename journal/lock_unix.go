//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive advisory lock on DIR/LOCK so that two
// journals (two daemons) never write the same directory.
func lockDir(dir string) (*os.File, error) {
	path := join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: opening lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("journal: %s is in use by another journal (lock %s held)", dir, path)
		}
		return nil, fmt.Errorf("journal: locking %s: %w", path, err)
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
