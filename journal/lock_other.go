//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package journal

import (
	"fmt"
	"os"
)

// lockDir opens DIR/LOCK; on this platform the lock is not enforced, so
// running two journals on one directory is the operator's responsibility.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: opening lock file: %w", err)
	}
	return f, nil
}

func unlockDir(f *os.File) error {
	if f == nil {
		return nil
	}
	return f.Close()
}
