package journal

import (
	"errors"
	"fmt"
)

// ErrCorrupt matches (with errors.Is) every *CorruptError.
var ErrCorrupt = errors.New("journal: corrupt")

// ErrClosed is returned by Wait for a record the journal did not make
// durable because it was closed first, and by calls made after Close.
var ErrClosed = errors.New("journal: closed")

// ErrSnapshotSuperseded is returned by WriteSnapshot for a boundary that is
// not newer than the snapshot already written.
var ErrSnapshotSuperseded = errors.New("journal: a snapshot at this boundary or a later one was already written")

// CorruptError reports damage found in a journal file: which file, where,
// and what was wrong.
type CorruptError struct {
	File   string // path of the damaged (or missing) file
	Offset int64  // byte offset of the damaged frame or header
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal: %s at byte offset %d: %s (Options.Recover keeps what precedes the damage)",
		e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }
