package journal

import "os"

// writebackWindow is how much of a file written through pacedFile (a
// snapshot, a preallocation step) may be written to the operating system
// before the daemon waits for the writeback of the window before it. A
// finish's sync then waits behind at most about two windows in the disk's
// queue instead of the whole file, which a final fsync would otherwise
// push at once (a snapshot of ten million units is 350 MB, and finishes
// waited up to 170 ms behind it: docs/persistence.md, "Snapshots and the
// finishes' syncs").
const writebackWindow = 4 << 20

// pacedFile writes a file sequentially from an offset and keeps its dirty
// data to about two windows: each window is handed to writeback as soon
// as it is written, and the one before it is waited for. Where the system
// has no such control (startWriteback reports false) it is a plain file.
// The file still needs its fsync: writeback neither flushes the disk's
// cache nor the file's metadata. Snapshot files and preallocation steps
// (segment.go) are written through it.
type pacedFile struct {
	f                  *os.File
	off                int64 // where the next write goes
	started, completed int64 // [completed, started) is being written back
	plain              bool  // pacing unavailable or failed: plain writes
}

// newPacedFile paces writes to f from offset off on.
func newPacedFile(f *os.File, off int64) *pacedFile {
	return &pacedFile{f: f, off: off, started: off, completed: off}
}

func (p *pacedFile) Write(b []byte) (int, error) {
	n, err := p.f.WriteAt(b, p.off)
	p.off += int64(n)
	if err != nil || p.plain || p.off-p.started < writebackWindow {
		return n, err
	}
	// The window just written goes to the disk now; the previous one is
	// waited for, so at most two are in flight.
	if !startWriteback(p.f, p.started, p.off-p.started) || !awaitWriteback(p.f, p.completed, p.started-p.completed) {
		p.plain = true // fsync at the end still makes it all durable
		return n, nil
	}
	p.completed, p.started = p.started, p.off
	return n, nil
}
