package memory

import (
	"runtime/debug"
	"sync"
)

// Recovery with the garbage collector off (docs/persistence.md,
// "Recovery"). Loading a snapshot allocates the whole state and frees
// almost nothing; replaying a journal of the default size frees little
// more. A collection meanwhile only marks the growing heap again, on the
// cores recovery runs on, and keeps write barriers on for the builder's
// map inserts: at 10M units it cost recovery about as much CPU as
// decoding the snapshot. So Open turns the collector off while it
// recovers (while it loads the snapshot only, if the journal after it is
// larger than maxGCPausedReplay, whose decoded records are garbage) and
// back on when the backend is ready; the first collection then runs
// beside the service.

// maxGCPausedReplay is the most journal replayed with the collector off.
const maxGCPausedReplay = 4 * DefaultSnapshotBytes

// gcPaused counts the recoveries under way that turned the collector off.
// The setting is the process's, hence the count: concurrent recoveries
// (tests) turn it back on once, when the last one ends.
var gcPaused struct {
	sync.Mutex
	n       int
	percent int // the setting to restore
}

// pauseGC turns the collector off until the returned function is called
// (once; later calls do nothing).
func pauseGC() (resume func()) {
	gcPaused.Lock()
	defer gcPaused.Unlock()
	if gcPaused.n == 0 {
		gcPaused.percent = debug.SetGCPercent(-1)
	}
	gcPaused.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			gcPaused.Lock()
			defer gcPaused.Unlock()
			if gcPaused.n--; gcPaused.n == 0 {
				debug.SetGCPercent(gcPaused.percent)
			}
		})
	}
}
