//go:build !linux

package journal

import (
	"errors"
	"os"
)

// errNoPacing says that pacing is not available here: snapshot files and
// preallocation steps are written plainly and fsynced at the end.
var errNoPacing = errors.New("writeback pacing is not available on this system")

func startWriteback(*os.File, int64, int64) error { return errNoPacing }
func awaitWriteback(*os.File, int64, int64) error { return errNoPacing }
