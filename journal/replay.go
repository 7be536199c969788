package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// replayPlan is what Open decided to replay.
type replayPlan struct {
	snapshot uint64   // snapshot to load, 0 if none
	base     uint64   // first segment the replay needs: the snapshot's number, or 1
	segments []uint64 // base, base+1, ... in order
	obsolete []string // files superseded by the snapshot, removed after Replay
}

// planReplay lists the directory and decides what Replay reads. Damage it
// can see without reading records (a corrupt snapshot, a missing segment)
// fails here unless Options.Recover is set.
func (j *Journal) planReplay() error {
	l, err := listDir(j.dir)
	if err != nil {
		return err
	}
	for _, name := range l.temps {
		path := join(j.dir, name)
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("journal: removing unfinished snapshot %s: %w", path, err)
		}
		j.log.Info("removed an unfinished snapshot left by an interrupted snapshot", "file", path)
		j.note(func(r *Report) { r.Removed = append(r.Removed, path) })
	}

	p := replayPlan{base: 1}
	for i := len(l.snapshots) - 1; i >= 0; i-- {
		seq := l.snapshots[i]
		path := join(j.dir, snapshotName(seq))
		if p.snapshot != 0 {
			p.obsolete = append(p.obsolete, path)
			continue
		}
		verr := verifySnapshot(path, seq)
		var ce *CorruptError
		switch {
		case verr == nil:
			p.snapshot, p.base = seq, seq
		case errors.As(verr, &ce) && j.opts.Recover:
			if err := j.setAside(path, "snapshot is corrupt; falling back to an older one", verr); err != nil {
				return err
			}
		default:
			return verr
		}
	}

	next := p.base
	for i, seq := range l.segments {
		path := join(j.dir, segmentName(seq))
		if seq < p.base {
			p.obsolete = append(p.obsolete, path)
			continue
		}
		if seq == next {
			p.segments = append(p.segments, seq)
			next++
			continue
		}
		gap := &CorruptError{
			File:   join(j.dir, segmentName(next)),
			Offset: 0,
			Reason: fmt.Sprintf("segment missing from the sequence (the journal continues with %s)", segmentName(seq)),
		}
		if !j.opts.Recover {
			return gap
		}
		for _, later := range l.segments[i:] {
			if err := j.setAside(join(j.dir, segmentName(later)), "segment follows a missing segment", gap); err != nil {
				return err
			}
		}
		break
	}
	j.plan = p
	return nil
}

// setAside renames a file Replay will not read, logging why.
func (j *Journal) setAside(path, why string, cause error) error {
	dst, err := setAside(path)
	if err != nil {
		return err
	}
	j.log.Error("journal recovery dropped a file", "file", path, "kept_as", dst, "why", why, "damage", cause)
	j.note(func(r *Report) { r.SetAside = append(r.SetAside, dst) })
	return nil
}

// Replay feeds the journal to the caller: loadSnapshot (only if there is a
// snapshot) receives the snapshot's bytes exactly as WriteSnapshot's writer
// produced them, then apply receives every record after it, in append
// order. The slice passed to apply is only valid during the call. An error
// from either callback stops Replay and is returned wrapped.
//
// A torn last record of the last segment is truncated (with a warning);
// other damage fails Replay with a *CorruptError naming file and offset,
// unless Options.Recover is set (see Options). On success the journal opens
// a new segment and is ready for Append. Replay may be called only once.
func (j *Journal) Replay(loadSnapshot func(r io.Reader) error, apply func(rec []byte) error) error {
	j.mu.Lock()
	switch {
	case j.closed:
		j.mu.Unlock()
		return ErrClosed
	case j.replayed:
		j.mu.Unlock()
		return errors.New("journal: Replay called twice")
	}
	j.replayed = true
	j.mu.Unlock()

	start := time.Now()
	p := j.plan
	if loadSnapshot == nil || apply == nil {
		return errors.New("journal: Replay needs both a loadSnapshot and an apply function")
	}
	if p.snapshot != 0 {
		path := join(j.dir, snapshotName(p.snapshot))
		if err := loadSnapshotFile(path, p.snapshot, loadSnapshot); err != nil {
			return err
		}
		j.note(func(r *Report) { r.Snapshot = path })
	}

	next, err := j.replaySegments(apply)
	if err != nil {
		return err
	}
	for _, path := range p.obsolete {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			j.log.Warn("could not remove a file superseded by the snapshot", "file", path, "err", err)
			continue
		}
		j.note(func(r *Report) { r.Removed = append(r.Removed, path) })
	}

	seg, err := createSegment(j.dir, next, j.preallocMax())
	if err != nil {
		return err
	}
	j.mu.Lock()
	if j.closed { // Close ran meanwhile
		j.mu.Unlock()
		seg.finish()
		return ErrClosed
	}
	j.seg = seg
	j.curSeg = next
	j.pending = []chunk{{seg: next}}
	j.lastSnap = p.snapshot
	j.ready = true
	j.mu.Unlock()
	go j.flushLoop()

	rep := j.Report()
	j.log.Info("journal replayed", "snapshot", rep.Snapshot, "segments", rep.Segments,
		"records", rep.Records, "new_segment", segmentName(next), "took", time.Since(start))
	return nil
}

// replaySegments applies the planned segments in order, repairing a torn
// tail or (under Recover) cutting at damage. It returns the number of the
// segment to create for new appends.
func (j *Journal) replaySegments(apply func([]byte) error) (uint64, error) {
	p := j.plan
	next := p.base // number of the segment Replay creates for new appends
	for i, seq := range p.segments {
		last := i == len(p.segments)-1
		path := join(j.dir, segmentName(seq))
		n, end, d, err := replaySegment(path, seq, apply)
		j.note(func(r *Report) { r.Records += n; r.Segments++; r.Bytes += end })
		if err != nil {
			return 0, err
		}
		next = seq + 1
		if d == nil {
			continue
		}
		clean, torn := false, false
		if last {
			if clean, err = isPreallocatedEnd(path, d); err != nil {
				return 0, err
			}
			if !clean {
				if torn, err = isTornTail(path, d); err != nil {
					return 0, err
				}
			}
		}
		switch {
		case clean:
			// The zeros written ahead of the last record: cut them
			// off silently, the segment is never appended to again.
			return seq + 1, truncateFile(path, d.off)
		case torn:
			return j.truncateTornTail(path, seq, d)
		case j.opts.Recover:
			return j.keepPrefix(path, seq, d, p.segments[i+1:])
		default:
			return 0, d.corrupt(path)
		}
	}
	return next, nil
}

// replaySegment applies every readable record of one segment. It returns
// the number applied, the offset where reading stopped (the end of the
// last good frame) and, if it stopped at damage, where.
func replaySegment(path string, seq uint64, apply func([]byte) error) (int, int64, *damage, error) {
	f, fr, err := openFrames(path, segmentMagic, seq)
	var d *damage
	if errors.As(err, &d) {
		return 0, 0, d, nil
	}
	if err != nil {
		return 0, 0, nil, err
	}
	defer f.Close()
	n := 0
	for {
		off := fr.off
		rec, err := fr.next()
		if errors.Is(err, io.EOF) {
			return n, off, nil, nil
		}
		if errors.As(err, &d) {
			return n, off, d, nil
		}
		if err != nil {
			return n, off, nil, err
		}
		if err := apply(rec); err != nil {
			return n, off, nil, fmt.Errorf("journal: applying the record at %s offset %d: %w", path, off, err)
		}
		n++
	}
}

// truncateTornTail cuts the torn end off the last segment and returns the
// number of the segment to create next.
func (j *Journal) truncateTornTail(path string, seq uint64, d *damage) (uint64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("journal: stat %s: %w", path, err)
	}
	j.note(func(r *Report) {
		r.TornTail = fmt.Sprintf("%s@%d", path, d.off)
		r.TruncatedSize = st.Size() - d.off
	})
	j.log.Warn("truncating the torn end of the journal (a write interrupted by a crash)",
		"file", path, "offset", d.off, "bytes", st.Size()-d.off, "reason", d.reason)
	if d.off < headerSize {
		// Not even the header was written: the segment holds nothing.
		if err := os.Remove(path); err != nil {
			return 0, fmt.Errorf("journal: removing %s: %w", path, err)
		}
		return seq, syncDir(j.dir)
	}
	return seq + 1, truncateFile(path, d.off)
}

// keepPrefix handles damage inside a segment under Options.Recover: the
// damaged segment is copied aside, cut at the damage, and the segments after
// it are set aside. It returns the number of the segment to create next.
func (j *Journal) keepPrefix(path string, seq uint64, d *damage, later []uint64) (uint64, error) {
	cause := d.corrupt(path)
	next := seq + 1
	if d.off < headerSize {
		if err := j.setAside(path, "segment header is damaged", cause); err != nil {
			return 0, err
		}
		next = seq
	} else {
		dst, err := copyAside(path)
		if err != nil {
			return 0, err
		}
		j.log.Error("journal recovery dropped the records after the damage", "file", path,
			"offset", d.off, "original_kept_as", dst, "damage", cause)
		j.note(func(r *Report) { r.SetAside = append(r.SetAside, dst) })
		if err := truncateFile(path, d.off); err != nil {
			return 0, err
		}
	}
	for _, s := range later {
		if err := j.setAside(join(j.dir, segmentName(s)), "segment follows a damaged one", cause); err != nil {
			return 0, err
		}
	}
	return next, nil
}

// truncateFile cuts path to size bytes, durably.
func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: opening %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("journal: truncating %s to %d bytes: %w", path, size, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: fsync of %s: %w", path, err)
	}
	return nil
}

// copyAside copies path to a ".damaged" name, durably, and returns it.
func copyAside(path string) (string, error) {
	dst := fmt.Sprintf("%s%s-%s", path, damagedSuffix, time.Now().UTC().Format("20060102T150405.000000000"))
	src, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("journal: opening %s: %w", path, err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("journal: creating %s: %w", dst, err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", fmt.Errorf("journal: copying %s to %s: %w", path, dst, err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return "", fmt.Errorf("journal: fsync of %s: %w", dst, err)
	}
	return dst, out.Close()
}
