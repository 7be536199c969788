package journal

import (
	"errors"
	"os"
	"syscall"
)

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
// has no such control (startWriteback fails) it is a plain file.
// The file still needs its fsync: writeback neither flushes the disk's
// cache nor the file's metadata. Snapshot files and preallocation steps
// (segment.go) are written through it.
type pacedFile struct {
	f                  *os.File
	off                int64 // where the next write goes
	started, completed int64 // [completed, started) is being written back
	plain              bool  // pacing unavailable: plain writes
}

// newPacedFile paces writes to f from offset off on.
func newPacedFile(f *os.File, off int64) *pacedFile {
	return &pacedFile{f: f, off: off, started: off, completed: off}
}

// The writeback controls pacedFile uses (writeback_*.go); tests replace
// them to make the kernel report a failed writeback.
var (
	startWritebackFunc = startWriteback
	awaitWritebackFunc = awaitWriteback
)

// writebackError is a failed writeback that waiting for a window
// reported. The kernel reports such an error once per open file: the
// wait consumed it, and an fsync of the same descriptor afterwards
// returns success although the pages never reached the disk. So it is a
// failed write of the file, never a reason to carry on without pacing.
type writebackError struct{ Err error }

func (e *writebackError) Error() string { return "writeback failed: " + e.Err.Error() }
func (e *writebackError) Unwrap() error { return e.Err }

func (p *pacedFile) Write(b []byte) (int, error) {
	n, err := p.f.WriteAt(b, p.off)
	p.off += int64(n)
	if err != nil || p.plain || p.off-p.started < writebackWindow {
		return n, err
	}
	// The window just written goes to the disk now; the previous one is
	// waited for, so at most two are in flight. Starting writeback only
	// queues pages: if that fails, pacing is unavailable, and the fsync
	// at the end reports whatever went wrong with the pages.
	if err := startWritebackFunc(p.f, p.started, p.off-p.started); err != nil {
		p.plain = true
		return n, nil
	}
	if err := awaitWritebackFunc(p.f, p.completed, p.started-p.completed); err != nil {
		if noPacing(err) {
			p.plain = true
			return n, nil
		}
		return n, &writebackError{Err: err}
	}
	p.completed, p.started = p.started, p.off
	return n, nil
}

// noPacing reports whether err says sync_file_range cannot be used on
// the file at all (not a regular file, not supported), rather than that
// its writeback failed.
func noPacing(err error) bool {
	return errors.Is(err, errNoPacing) || errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL) ||
		errors.Is(err, syscall.ESPIPE) || errors.Is(err, syscall.EOPNOTSUPP)
}
