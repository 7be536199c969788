package journal

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// SyncPolicy says when a record counts as durable, that is when Wait
// returns for it.
type SyncPolicy int

const (
	// SyncGroup (the default) acknowledges a record once it has been written
	// and fsynced. One fsync covers every record appended while the previous
	// write and fsync ran (group commit), so the cost of an fsync is shared
	// by all concurrent callers.
	SyncGroup SyncPolicy = iota
	// SyncNone acknowledges a record once it has been written to the
	// operating system, without fsync. Records survive the process being
	// killed, not the machine losing power. Segment switches, snapshots and
	// Close still fsync.
	SyncNone
	// SyncInterval acknowledges a record once it has been written to the
	// operating system, like SyncNone, and fsyncs the segment at most once
	// per Options.SyncInterval: the first write after a sync arms a timer
	// that syncs everything written by then. Records survive the process
	// being killed; a power loss loses at most the records acknowledged in
	// the last interval (plus however late the timer fires).
	SyncInterval
)

// String names the policy as a flag would (without SyncInterval's
// duration; see FormatSync).
func (p SyncPolicy) String() string {
	switch p {
	case SyncGroup:
		return "group"
	case SyncNone:
		return "none"
	case SyncInterval:
		return "interval"
	default:
		return fmt.Sprintf("SyncPolicy(%d)", int(p))
	}
}

// ParseSyncPolicy reads "group" and "none".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "group":
		return SyncGroup, nil
	case "none":
		return SyncNone, nil
	}
	return 0, fmt.Errorf("journal: unknown sync policy %q (want group, none or interval=DURATION)", s)
}

// ParseSync reads a -sync flag value: "group", "none" or
// "interval=DURATION" (a positive time.ParseDuration string), returning
// the policy and, for SyncInterval, the interval.
func ParseSync(s string) (SyncPolicy, time.Duration, error) {
	rest, ok := strings.CutPrefix(s, "interval=")
	if !ok {
		p, err := ParseSyncPolicy(s)
		return p, 0, err
	}
	d, err := time.ParseDuration(rest)
	if err != nil {
		return 0, 0, fmt.Errorf("journal: sync policy %q: %w", s, err)
	}
	if d <= 0 {
		return 0, 0, fmt.Errorf("journal: sync policy %q: the interval must be positive", s)
	}
	return SyncInterval, d, nil
}

// FormatSync is the inverse of ParseSync.
func FormatSync(p SyncPolicy, interval time.Duration) string {
	if p == SyncInterval {
		return "interval=" + interval.String()
	}
	return p.String()
}

// Options configure Open.
type Options struct {
	// Dir is the data directory. It is created (mode 0700) if missing and
	// locked against a second Journal, in this or another process, for as
	// long as the Journal is open.
	Dir string
	// Sync is the durability policy; the zero value is SyncGroup.
	Sync SyncPolicy
	// SyncInterval is the longest time between a write and its fsync
	// under SyncInterval (which requires it positive); unused otherwise.
	SyncInterval time.Duration
	// Logger receives warnings about repaired tails, dropped data and
	// removed leftovers; nil means slog.Default().
	Logger *slog.Logger
	// Recover keeps whatever can be read when the journal is damaged
	// somewhere other than its very end (a bad record followed by more
	// data, a missing segment, a corrupt snapshot). Without it such damage
	// makes Open or Replay fail. Everything dropped is logged and kept on
	// disk under a ".damaged" name for inspection.
	Recover bool
	// Preallocate is the largest step by which the segment being written
	// is zero-filled ahead of its write position, so that group commits
	// sync data without growing the file (see segment.go). Steps start
	// small and double up to this. 0 means DefaultPreallocate; a negative
	// value disables preallocation (every write then grows the file).
	Preallocate int64
	// ContentVersion is the version of the caller's own record and
	// snapshot encoding. It is stored in the header of every segment and
	// snapshot written and handed back by Replay with what that file holds,
	// so the caller can read files written by an older version of itself.
	// Files of journal format 1, which had no such field, report 0.
	ContentVersion uint32
}
