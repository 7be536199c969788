//go:build !linux

package journal

import "os"

// datasync falls back to a full fsync where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }

// openDataSync returns no file here: segments keep write + fsync.
func openDataSync(string) (*os.File, error) { return nil, nil }
