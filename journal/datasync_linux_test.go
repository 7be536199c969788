package journal

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// dsyncDescriptors counts this process's open descriptors of path that
// were opened with O_DSYNC (from /proc/self/fdinfo).
func dsyncDescriptors(t *testing.T, path string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil || target != path {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		for line := range strings.SplitSeq(string(info), "\n") {
			v, ok := strings.CutPrefix(line, "flags:")
			if !ok {
				continue
			}
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				t.Fatalf("fdinfo flags %q: %v", v, err)
			}
			if flags&syscall.O_DSYNC != 0 {
				n++
			}
		}
	}
	return n
}

// Under SyncGroup the records go through an O_DSYNC descriptor of the
// segment (one write per group, no fdatasync flushing the header page the
// mark dirtied); under the other policies they do not, and every group is
// still counted as one sync under SyncGroup.
func TestGroupWritesThroughODSync(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncGroup, SyncNone} {
		t.Run(policy.String(), func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			opts := testOptions(dir, nil)
			opts.Sync = policy
			j, _ := mustOpen(t, opts)
			before := j.Stats().Syncs
			for _, rec := range numbered("r", 0, 5) {
				appendWait(t, j, rec)
			}
			want := 0
			if policy == SyncGroup {
				want = 1
				if got := j.Stats().Syncs - before; got < 5 {
					t.Errorf("5 groups made %d syncs, want at least 5", got)
				}
			}
			if got := dsyncDescriptors(t, join(dir, segmentName(1))); got != want {
				t.Errorf("%d O_DSYNC descriptors of the segment, want %d", got, want)
			}
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			_, got := mustOpen(t, testOptions(dir, nil))
			equalRecords(t, got.records, numbered("r", 0, 5))
		})
	}
}

// Where the O_DSYNC descriptor cannot be opened the segment falls back to
// write + fdatasync: a warning, every group synced, nothing lost, and a
// crash copy taken while open replays every acknowledged record.
func TestODSyncFallback(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	j, err := Open(testOptions(dir, logs))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.openDataSync = func(string) (*os.File, error) { return nil, errors.New("no O_DSYNC here") }
	noSnapshot := func(io.Reader, SnapshotInfo) error { return errors.New("no snapshot expected") }
	if err := j.Replay(noSnapshot, func([]byte, uint32) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "no O_DSYNC here") {
		t.Errorf("no warning about the fallback in the log:\n%s", logs)
	}
	before := j.Stats().Syncs
	for _, rec := range numbered("r", 0, 5) {
		appendWait(t, j, rec)
	}
	if got := j.Stats().Syncs - before; got < 5 {
		t.Errorf("5 groups made %d fdatasyncs, want at least 5", got)
	}
	if got := dsyncDescriptors(t, join(dir, segmentName(1))); got != 0 {
		t.Errorf("%d O_DSYNC descriptors after the fallback, want 0", got)
	}
	crash := copyDir(t, dir)
	_, got := mustOpen(t, testOptions(crash, nil))
	equalRecords(t, got.records, numbered("r", 0, 5))
}
