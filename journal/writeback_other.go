//go:build !linux

package journal

import "os"

// startWriteback and awaitWriteback report that pacing is not available
// here: snapshot files and preallocation steps are written plainly and
// fsynced at the end.
func startWriteback(*os.File, int64, int64) bool { return false }
func awaitWriteback(*os.File, int64, int64) bool { return false }
