package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// File names in the data directory. Sequence numbers are zero-padded so a
// directory listing sorts in replay order.
const (
	segmentPrefix  = "journal-"
	segmentSuffix  = ".log"
	snapshotPrefix = "snapshot-"
	snapshotSuffix = ".snap"
	deltaSuffix    = ".delta"
	tempSuffix     = ".tmp"
	damagedSuffix  = ".damaged"
)

func segmentName(seq uint64) string {
	return fmt.Sprintf("%s%020d%s", segmentPrefix, seq, segmentSuffix)
}
func snapshotName(seq uint64) string {
	return fmt.Sprintf("%s%020d%s", snapshotPrefix, seq, snapshotSuffix)
}
func deltaName(seq uint64) string {
	return fmt.Sprintf("%s%020d%s", snapshotPrefix, seq, deltaSuffix)
}

// parseSeq returns the sequence number of a file called prefix<digits>suffix.
func parseSeq(name, prefix, suffix string) (uint64, bool) {
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
		return 0, false
	}
	digits := name[len(prefix) : len(name)-len(suffix)]
	if digits == "" {
		return 0, false
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	if err != nil || seq == 0 {
		return 0, false
	}
	return seq, true
}

// listing is what a data directory holds, in ascending sequence order.
type listing struct {
	segments  []uint64
	snapshots []uint64
	deltas    []uint64
	temps     []string // unfinished snapshot and delta files (names)
}

func listDir(dir string) (listing, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return listing{}, fmt.Errorf("journal: listing %s: %w", dir, err)
	}
	var l listing
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(name, tempSuffix) && strings.HasPrefix(name, snapshotPrefix) {
			l.temps = append(l.temps, name)
		} else if seq, ok := parseSeq(name, segmentPrefix, segmentSuffix); ok {
			l.segments = append(l.segments, seq)
		} else if seq, ok := parseSeq(name, snapshotPrefix, snapshotSuffix); ok {
			l.snapshots = append(l.snapshots, seq)
		} else if seq, ok := parseSeq(name, snapshotPrefix, deltaSuffix); ok {
			l.deltas = append(l.deltas, seq)
		}
	}
	slices.Sort(l.segments)
	slices.Sort(l.snapshots)
	slices.Sort(l.deltas)
	return l, nil
}

// setAside renames a damaged or unreplayable file so no later Open reads
// it, keeping it for inspection. It returns the new path.
func setAside(path string) (string, error) {
	dst := fmt.Sprintf("%s%s-%s", path, damagedSuffix, time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("journal: setting aside %s: %w", path, err)
	}
	return dst, nil
}

// SyncDir fsyncs directory dir, so that the creations, renames and
// removals of entries in it are durable. A rename is durable once the
// directory it is in is synced (both directories when it moves an entry
// from one to another).
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening directory %s for fsync: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync of directory %s: %w", dir, err)
	}
	return nil
}

// syncDir is SyncDir with the journal's prefix on its errors.
func syncDir(dir string) error {
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

func join(dir, name string) string { return filepath.Join(dir, name) }
