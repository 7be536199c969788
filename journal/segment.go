package journal

import (
	"errors"
	"fmt"
	"os"
)

// Preallocation. A group commit on a file that grows makes the filesystem
// commit the new size and block map with every fsync (on ext4 a journal
// commit, several times the cost of writing the data). The segment being
// written is therefore kept zero-filled ahead of its write position: the
// zeros are written (not just reserved: on ext4 fallocate leaves
// "unwritten" extents whose conversion is again metadata) and fsynced in
// steps that double from firstPreallocStep up to Options.Preallocate, and
// each group is made durable by an O_DSYNC write (or write + fdatasync),
// which then has only data to flush. Replay reads zeros starting at a frame boundary of the last
// segment as its clean end. A segment is truncated to its used length when
// it is finished, so only the last segment ever has a zero tail.
const (
	// DefaultPreallocate is the largest preallocation step when
	// Options.Preallocate is 0.
	DefaultPreallocate = 64 << 20
	// firstPreallocStep is the zero-filled space a new segment starts
	// with: small, so that journals that rotate often (small snapshot
	// thresholds) do not write megabytes of zeros per segment.
	firstPreallocStep = 256 << 10
	// zeroBlock is the size of the zero buffer preallocation writes from.
	zeroBlock = 256 << 10
)

// segmentFile is the segment receiving writes. It is owned by the flusher
// (by Replay before the flusher starts).
type segmentFile struct {
	f *os.File
	// dsync, when not nil, is a second descriptor of the file opened with
	// O_DSYNC (SyncGroup only, see useDataSyncWrites): records written
	// through it are durable when the write returns, and only their own
	// pages are flushed. Marks and zeros still go through f.
	dsync *os.File
	seq   uint64
	mark  mark  // last mark written to the header
	slot  int   // slot the next mark goes to
	off   int64 // end of the frames written: where the next one goes
	alloc int64 // size of the file; off..alloc holds zeros written ahead
	step  int64 // size of the next preallocation step
	max   int64 // largest step; 0: no preallocation
	dirty bool  // written through f since the last sync, and needing it
	// durable is the end of the frames known to be on disk: written
	// through dsync, or before the last completed sync. The mark covers
	// no more than this, except with markWritten.
	durable int64
	// markWritten (SyncNone) lets the mark cover every frame written,
	// synced or not: acknowledged records a power cut then loses are
	// reported by the next start instead of passing for a torn tail.
	// Under SyncInterval such a loss is the policy's promise (at most the
	// last interval, a prefix kept), so the mark waits for the sync.
	markWritten bool
	// zeros is the preallocation step in flight (startZeros), nil when
	// none is: it writes from alloc on, and no record is written past
	// alloc until it is taken (takeZeros).
	zeros *zeroStep
}

// zeroStep is a preallocation step written by a goroutine of its own: the
// file holds zeros up to end once it is done.
type zeroStep struct {
	end  int64
	sync bool            // the goroutine syncs the zeros
	done chan zeroResult // buffered: the goroutine never waits for the taker
}

// zeroResult is how a preallocation step ended: writing the zeros failed
// (preallocation stops for the segment: only speed is lost), or their
// sync did (the journal fails like on any failed sync).
type zeroResult struct {
	writeErr, syncErr error
}

// createSegment creates segment seq with its header and first
// preallocation, fsynced together with the directory entry. maxStep <= 0
// disables preallocation.
func createSegment(dir string, seq uint64, content uint32, maxStep int64) (*segmentFile, error) {
	path := join(dir, segmentName(seq))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: creating segment: %w", err)
	}
	s := &segmentFile{f: f, seq: seq, max: max(maxStep, 0), mark: mark{end: headerSize}}
	s.step = min(firstPreallocStep, s.max)
	if _, err := f.WriteAt(encodeHeader(segmentMagic, seq, content), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: writing header of %s: %w", path, err)
	}
	s.off, s.alloc = headerSize, headerSize+s.step
	s.durable = s.off
	if err := writeZeros(f, s.off, s.alloc); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: fsync of %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func (s *segmentFile) name() string { return s.f.Name() }

// write writes frames at the end of the used part. Through dsync they
// are durable when it returns; otherwise the segment is dirty until sync.
func (s *segmentFile) write(buf []byte) error {
	f := s.f
	if s.dsync != nil {
		f = s.dsync
	}
	if _, err := f.WriteAt(buf, s.off); err != nil {
		return fmt.Errorf("journal: writing %s: %w", s.name(), err)
	}
	s.off += int64(len(buf))
	s.alloc = max(s.alloc, s.off)
	s.dirty = s.dirty || s.dsync == nil
	if s.dsync != nil {
		s.durable = s.off
	}
	return nil
}

// useDataSyncWrites opens the O_DSYNC descriptor records are written
// through from now on (SyncGroup), with open (openDataSync; tests
// substitute a failing one). A group then costs one write that flushes
// its own pages, instead of a write and an fdatasync that also flushes the
// header page the previous group's mark dirtied (docs/persistence.md,
// "Group commit through O_DSYNC writes"). On an error, or no file (a
// platform without O_DSYNC), the segment keeps write + fdatasync, which is
// equally durable.
func (s *segmentFile) useDataSyncWrites(open func(string) (*os.File, error)) error {
	f, err := open(s.f.Name())
	if err != nil {
		return fmt.Errorf("journal: opening %s for O_DSYNC writes: %w", s.name(), err)
	}
	s.dsync = f
	return nil
}

// sync makes what was written durable (fdatasync).
func (s *segmentFile) sync() error {
	if err := datasync(s.f); err != nil {
		return fmt.Errorf("journal: fdatasync of %s: %w", s.name(), err)
	}
	s.dirty = false
	s.durable = s.off
	return nil
}

// needsZeros reports whether less than half a step of zeros is left ahead
// of the write position and no step is in flight.
func (s *segmentFile) needsZeros() bool {
	return s.max > 0 && s.zeros == nil && s.alloc-s.off < s.step/2
}

// startZeros starts the next step of zeros ahead of the write position
// (doubling the step up to max) on a goroutine of its own, and with sync
// fdatasyncs them there (the size changed: one metadata commit per step).
// Written inline, a 64 MiB step and its sync held every waiting finish
// for 20-150 ms ("Preallocation off the flusher" in
// docs/persistence.md). The zeros are handed to writeback a window at a
// time (pacedFile), so the group syncs meanwhile do not queue behind
// them. takeZeros collects the outcome.
func (s *segmentFile) startZeros(sync bool) {
	s.step = min(2*s.step, s.max)
	from, end := s.alloc, s.off+s.step
	if end <= from {
		return
	}
	z := &zeroStep{end: end, sync: sync, done: make(chan zeroResult, 1)}
	s.zeros = z
	f := s.f
	go func() {
		r := zeroResult{writeErr: writeZeros(f, from, end)}
		if wb := (*writebackError)(nil); errors.As(r.writeErr, &wb) {
			// Waiting for the zeros' writeback reported a failed
			// writeback of the file, which may be the records' or the
			// mark's, and no later sync of f reports it again: the
			// journal fails as on a failed sync.
			r.writeErr, r.syncErr = nil, fmt.Errorf("journal: preallocating %s: %w", f.Name(), wb)
		}
		if r.writeErr == nil && r.syncErr == nil && sync {
			if err := datasync(f); err != nil {
				r.syncErr = fmt.Errorf("journal: fdatasync of %s: %w", f.Name(), err)
			}
		}
		z.done <- r
	}()
}

// takeZeros takes the outcome of the step in flight: at once if it is
// done, or with wait once it is. It reports whether a step ended. Its
// zeros, or whatever part of them was written, count as allocated:
// finish cuts them off in any case.
func (s *segmentFile) takeZeros(wait bool) (r zeroResult, ended bool) {
	z := s.zeros
	if z == nil {
		return r, false
	}
	if wait {
		r = <-z.done
	} else {
		select {
		case r = <-z.done:
		default:
			return r, false
		}
	}
	s.zeros = nil
	s.alloc = max(s.alloc, z.end)
	s.dirty = s.dirty || !z.sync || r.writeErr != nil
	return r, true
}

// writeZeros writes zeros to f from from up to end, paced (pacedFile):
// a preallocation step, on its own goroutine after the first.
func writeZeros(f *os.File, from, end int64) error {
	p := newPacedFile(f, from)
	zeros := make([]byte, min(zeroBlock, max(end-from, 0)))
	for p.off < end {
		if _, err := p.Write(zeros[:min(int64(len(zeros)), end-p.off)]); err != nil {
			return fmt.Errorf("journal: preallocating %s: %w", f.Name(), err)
		}
	}
	return nil
}

// writeMark records in the header that the records up to end are
// acknowledged (and, with markSealed, that segment seq+1 exists). It is
// not synced here: the next sync of the file carries it. With dsync the
// records' writes do not: the mark then reaches the disk with the next
// preallocation step, the segment's finish or the kernel's writeback,
// lagging further behind on a power cut but never claiming more than is
// durable, and covering every acknowledged record after a kill (it is in
// the page cache as soon as it is written).
func (s *segmentFile) writeMark(m mark) error {
	if err := writeSlot(s.f, s.seq, s.slot, m); err != nil {
		return err
	}
	s.slot ^= 1
	s.mark = m
	s.dirty = s.dirty || s.dsync == nil
	return nil
}

// markAcknowledged writes the mark for the frames known durable (every
// frame written, with markWritten), if it moved. A mark written before the
// frames it covers are on disk could reach the disk first (writeback, or
// one sync flushing both, keeps no order): after a power cut it would
// claim records that are not there.
func (s *segmentFile) markAcknowledged() error {
	end := s.durable
	if s.markWritten {
		end = s.off
	}
	if end == s.mark.end {
		return nil
	}
	return s.writeMark(mark{end: end, gen: s.mark.gen})
}

// writeSlot writes mark m into slot (0 or 1) of segment seq's header.
func writeSlot(f *os.File, seq uint64, slot int, m mark) error {
	b := encodeSlot(seq, m)
	if _, err := f.WriteAt(b[:], int64(slotOffset+slot*slotSize)); err != nil {
		return fmt.Errorf("journal: writing the mark of %s: %w", f.Name(), err)
	}
	return nil
}

// finish ends the segment: the records are synced, then the final mark
// (every record) goes to the header, the unused zeros are cut off, and the
// mark and the new size are fsynced (whatever the policy, so that only the
// last segment can ever be torn or carry a zero tail). The file stays open
// for seal; close closes it.
func (s *segmentFile) finish() error {
	r, _ := s.takeZeros(true) // the cut below must not race a step's zeros
	err := r.syncErr
	if err == nil && s.durable != s.off {
		err = s.sync()
	}
	if err == nil {
		err = s.markAcknowledged()
	}
	if err == nil && s.alloc != s.off {
		if err = s.f.Truncate(s.off); err != nil {
			err = fmt.Errorf("journal: truncating %s to its %d used bytes: %w", s.name(), s.off, err)
		}
		s.alloc = s.off
	}
	if err == nil {
		if err = s.f.Sync(); err != nil {
			err = fmt.Errorf("journal: fsync of %s: %w", s.name(), err)
		}
		s.dirty = false
	}
	return err
}

// seal records, durably, that segment seq+1 now exists and continues the
// journal (segment.go's switch creates it first), so that a replay finding
// no seq+1 knows acknowledged records are missing.
func (s *segmentFile) seal() error {
	if err := s.writeMark(mark{end: s.off, sealed: true, gen: s.mark.gen}); err != nil {
		return err
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("journal: fsync of %s: %w", s.name(), err)
	}
	return nil
}

// close closes the file.
func (s *segmentFile) close() error {
	s.takeZeros(true) // a failed segment: its step's outcome no longer matters
	if s.dsync != nil {
		s.dsync.Close() // nothing buffered: its writes were synchronous
		s.dsync = nil
	}
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("journal: closing %s: %w", s.name(), err)
	}
	return nil
}

// finishClose is finish then close, for the last segment (Close).
func (s *segmentFile) finishClose() error {
	err := s.finish()
	if cerr := s.close(); err == nil {
		err = cerr
	}
	return err
}

// sealFile seals a segment left by an earlier run (Replay, once it has
// created the segment that continues it) with mark m.
func sealFile(path string, seq uint64, m mark, slot int) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("journal: opening %s to seal it: %w", path, err)
	}
	defer f.Close()
	if err := writeSlot(f, seq, slot, m); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("journal: fsync of %s: %w", path, err)
	}
	return nil
}
