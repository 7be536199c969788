//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package journal

import (
	"fmt"
	"os"
)

// lockDir opens the data directory; on this platform the lock is not
// enforced, so running two journals on one directory is the operator's
// responsibility.
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("journal: opening %s: %w", dir, err)
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}
