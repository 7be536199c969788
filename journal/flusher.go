package journal

import (
	"fmt"
	"os"
)

// spareLimit caps the write buffer kept for reuse, so one huge record does
// not pin its memory forever.
const spareLimit = 4 << 20

// flushLoop is the single background writer. Each round takes everything
// appended so far, writes it with one write call per segment, fsyncs once
// (SyncGroup) and releases every waiter up to the last ticket taken.
// Appends made meanwhile form the next round's group.
func (j *Journal) flushLoop() {
	defer close(j.done)
	for {
		select {
		case <-j.kick:
		case <-j.stop:
		}
		chunks, upTo, closing := j.takePending()
		err := j.writeChunks(chunks, j.opts.Sync == SyncGroup || closing)
		if closing {
			if j.file != nil {
				if cerr := j.file.Close(); err == nil && cerr != nil {
					err = fmt.Errorf("journal: closing %s: %w", j.file.Name(), cerr)
				}
				j.file = nil
			}
		}
		j.publish(upTo, err, closing)
		if closing {
			return
		}
	}
}

// takePending swaps the pending chunks for an empty one, reusing the
// previous round's buffer.
func (j *Journal) takePending() (chunks []chunk, upTo Ticket, closing bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	chunks = j.pending
	j.pending = []chunk{{seg: j.curSeg, buf: j.spare[:0]}}
	j.spare = nil
	if j.failed != nil {
		chunks = nil // nothing more is written after a failure
	}
	return chunks, j.last, j.closed
}

// writeChunks writes the taken chunks in order, switching segment files at
// rotations, and fsyncs the current file when sync is set.
func (j *Journal) writeChunks(chunks []chunk, sync bool) error {
	wrote := false
	for _, c := range chunks {
		if c.seg != j.fileSeg {
			if err := j.switchSegment(c.seg); err != nil {
				return err
			}
		}
		if len(c.buf) > 0 {
			if _, err := j.file.Write(c.buf); err != nil {
				return fmt.Errorf("journal: writing %s: %w", j.file.Name(), err)
			}
			j.dirty, wrote = true, true
		}
	}
	if sync && j.dirty {
		if err := j.file.Sync(); err != nil {
			return fmt.Errorf("journal: fsync of %s: %w", j.file.Name(), err)
		}
		j.dirty = false
		j.counters.syncs.Add(1)
	}
	if wrote {
		j.counters.flushes.Add(1)
	}
	if n := len(chunks); n > 0 && cap(chunks[n-1].buf) <= spareLimit {
		j.mu.Lock()
		j.spare = chunks[n-1].buf[:0]
		j.mu.Unlock()
	}
	return nil
}

// switchSegment finishes the current segment (fsync, whatever the policy,
// so that only the last segment can ever have a torn end) and starts seg.
func (j *Journal) switchSegment(seg uint64) error {
	if j.file != nil {
		if err := j.file.Sync(); err != nil {
			return fmt.Errorf("journal: fsync of %s: %w", j.file.Name(), err)
		}
		j.counters.syncs.Add(1)
		if err := j.file.Close(); err != nil {
			return fmt.Errorf("journal: closing %s: %w", j.file.Name(), err)
		}
		j.file, j.dirty = nil, false
	}
	f, err := createSegment(j.dir, seg)
	if err != nil {
		return err
	}
	j.file, j.fileSeg = f, seg
	return nil
}

// createSegment creates segment seq with its header, fsynced together with
// the directory entry.
func createSegment(dir string, seq uint64) (*os.File, error) {
	path := join(dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: creating segment: %w", err)
	}
	if _, err := f.Write(encodeHeader(segmentMagic, seq)); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: writing header of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: fsync of %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// publish records the outcome of a round and wakes every waiter.
func (j *Journal) publish(upTo Ticket, err error, stopped bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.failed != nil:
	case err != nil:
		j.failed = err
	default:
		j.durable = upTo
	}
	if stopped {
		j.stopped = true
	}
	close(j.flushed)
	j.flushed = make(chan struct{})
	if err != nil {
		j.log.Error("journal write failed; no further record will be acknowledged", "err", err)
	}
}
