package journal

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// snapshotChunk is the payload size of one snapshot frame. Framing the
// snapshot lets a reader locate damage to within one chunk.
const snapshotChunk = 64 << 10

// Boundary is a point in the journal between two segments, returned by
// Rotate: every record appended before it is in a segment numbered below
// Seq, every record appended after it in Seq or later.
type Boundary struct {
	Seq    uint64 // first segment after the boundary; names the snapshot
	ticket Ticket // durable once the flusher has switched to Seq
}

// Rotate ends the current segment and returns the boundary. It never blocks
// on disk. Call it while holding the lock under which you Append, and
// capture the state you will snapshot under that same lock hold: the
// captured state then reflects exactly the records before the boundary.
func (j *Journal) Rotate() Boundary {
	j.mu.Lock()
	if !j.ready || j.closed {
		j.mu.Unlock()
		return Boundary{}
	}
	j.curSeg++
	j.pending = append(j.pending, chunk{seg: j.curSeg})
	j.rotBytes = 0
	j.last++ // the rotation takes a ticket: durable once the switch is done
	b := Boundary{Seq: j.curSeg, ticket: j.last}
	j.mu.Unlock()
	j.wake()
	return b
}

// WriteSnapshot writes the snapshot for boundary b: write must produce the
// caller's full state as it was at b (see Rotate), in any encoding; Replay
// hands the same bytes to loadSnapshot. It runs outside the caller's lock
// while appends continue. Once the snapshot is written and fsynced, and
// every record before b is durable, it is renamed into place and the
// segments and snapshots it supersedes are deleted.
//
// A failed or interrupted snapshot leaves the journal as it was (the
// partial file is removed, now or by the next Open).
func (j *Journal) WriteSnapshot(ctx context.Context, b Boundary, write func(w io.Writer) error) error {
	return j.writeSnapshot(ctx, b, false, write)
}

// WriteDelta writes a delta for boundary b: write must produce what
// changed between the newest snapshot or delta on disk and b, in any
// encoding; Replay hands the same bytes to ReplayFuncs.Delta after the
// snapshot and the deltas before it. The file (snapshot-<seq>.delta)
// names the snapshot or delta it follows, so that a missing link is
// found on the next Open. Once it is installed (as in WriteSnapshot),
// only the segments before b are deleted: the base snapshot and its
// deltas stay until the next WriteSnapshot supersedes them. There must
// be a snapshot on disk (written by WriteSnapshot or replayed).
func (j *Journal) WriteDelta(ctx context.Context, b Boundary, write func(w io.Writer) error) error {
	return j.writeSnapshot(ctx, b, true, write)
}

// writeSnapshot is WriteSnapshot and WriteDelta.
func (j *Journal) writeSnapshot(ctx context.Context, b Boundary, delta bool, write func(w io.Writer) error) error {
	if b.Seq == 0 {
		return errors.New("journal: WriteSnapshot: the boundary comes from Rotate on a journal not replayed or already closed")
	}
	j.snapMu.Lock()
	defer j.snapMu.Unlock()
	j.mu.Lock()
	closed, failed := j.closed, j.failed
	j.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if failed != nil {
		// It could never be installed (the records before it are not
		// all durable, or the caller's state holds a change the journal
		// lacks): do not write it for nothing.
		return fmt.Errorf("journal: no snapshot after the journal failed: %w", failed)
	}
	if b.Seq <= j.lastSnap {
		return ErrSnapshotSuperseded
	}
	final := join(j.dir, snapshotName(b.Seq))
	if delta {
		if j.lastSnap == 0 {
			return errors.New("journal: WriteDelta: no snapshot for the delta to follow")
		}
		final = join(j.dir, deltaName(b.Seq))
		inner := write
		prev := j.lastSnap
		write = func(w io.Writer) error {
			if _, err := w.Write(binary.LittleEndian.AppendUint64(nil, prev)); err != nil {
				return err
			}
			return inner(w)
		}
	}
	temp := final + tempSuffix
	if err := writeSnapshotFile(temp, b.Seq, j.opts.ContentVersion, write); err != nil {
		os.Remove(temp)
		return err
	}
	if err := j.Wait(ctx, b.ticket); err != nil {
		os.Remove(temp)
		return fmt.Errorf("journal: snapshot %s: waiting for the records before it: %w", final, err)
	}
	if err := os.Rename(temp, final); err != nil {
		os.Remove(temp)
		return fmt.Errorf("journal: installing snapshot %s: %w", final, err)
	}
	if err := syncDir(j.dir); err != nil {
		return err
	}
	j.lastSnap = b.Seq
	j.removeSuperseded(b.Seq, !delta)
	return nil
}

// Snapshot is Rotate and WriteSnapshot in one call: it locks l (the lock
// under which the caller appends; a read lock is enough if every Append
// happens under the write lock), rotates, calls capture and unlocks, then
// runs the writer capture returned. capture must copy (or freeze) what the
// writer needs, since appends resume as soon as it returns.
func (j *Journal) Snapshot(ctx context.Context, l sync.Locker, capture func() (write func(w io.Writer) error)) error {
	l.Lock()
	b := j.Rotate()
	write := capture()
	l.Unlock()
	return j.WriteSnapshot(ctx, b, write)
}

// removeSuperseded deletes segments older than seq and, after a new base
// snapshot (base), the snapshots and deltas older than it. Failures only
// cost disk space, so they are logged, not returned.
func (j *Journal) removeSuperseded(seq uint64, base bool) {
	l, err := listDir(j.dir)
	if err != nil {
		j.log.Warn("could not list the journal to remove superseded files", "err", err)
		return
	}
	removed := false
	remove := func(path string) {
		if err := removeFile(path); err != nil {
			j.log.Warn("could not remove a superseded journal file", "file", path, "err", err)
			return
		}
		removed = true
	}
	for _, s := range l.segments {
		if s < seq {
			remove(join(j.dir, segmentName(s)))
		}
	}
	for _, s := range l.snapshots {
		if s < seq && base {
			remove(join(j.dir, snapshotName(s)))
		}
	}
	for _, s := range l.deltas {
		if s < seq && base {
			remove(join(j.dir, deltaName(s)))
		}
	}
	if removed {
		if err := syncDir(j.dir); err != nil {
			j.log.Warn("fsync after removing superseded journal files failed", "err", err)
		}
	}
}

// writeSnapshotFile writes header, framed chunks and the end marker (an
// empty frame) to path and fsyncs it.
func writeSnapshotFile(path string, seq uint64, content uint32, write func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: creating snapshot: %w", err)
	}
	bw := bufio.NewWriterSize(newPacedFile(f, 0), snapshotChunk+frameHeaderSize)
	cw := &chunkWriter{w: bw, buf: make([]byte, 0, snapshotChunk)}
	err = func() error {
		if _, err := bw.Write(encodeHeader(snapshotMagic, seq, content)); err != nil {
			return err
		}
		if err := write(cw); err != nil {
			return fmt.Errorf("snapshot writer: %w", err)
		}
		if err := cw.finish(); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("journal: writing snapshot %s: %w", path, err)
	}
	return nil
}

// chunkWriter frames what the caller writes into snapshotChunk-sized
// frames. It never emits an empty frame except as the end marker.
type chunkWriter struct {
	w   io.Writer
	buf []byte
	err error
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n := 0
	for len(p) > 0 {
		k := min(len(p), snapshotChunk-len(c.buf))
		c.buf = append(c.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(c.buf) == snapshotChunk {
			if c.err = c.emit(c.buf); c.err != nil {
				return n, c.err
			}
			c.buf = c.buf[:0]
		}
	}
	return n, nil
}

func (c *chunkWriter) emit(payload []byte) error {
	h := frameHeader(payload)
	if _, err := c.w.Write(h[:]); err != nil {
		return err
	}
	_, err := c.w.Write(payload)
	return err
}

// finish emits the last partial chunk and the end marker.
func (c *chunkWriter) finish() error {
	if c.err != nil {
		return c.err
	}
	if len(c.buf) > 0 {
		if err := c.emit(c.buf); err != nil {
			return err
		}
	}
	return c.emit(nil)
}

// snapshotReader serves the payload of a snapshot's frames as one stream.
type snapshotReader struct {
	path string
	fr   *frameReader
	cur  []byte
	end  bool
}

func (s *snapshotReader) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		if s.end {
			return 0, io.EOF
		}
		payload, err := s.fr.next()
		var d *damage
		switch {
		case errors.As(err, &d):
			return 0, d.corrupt(s.path)
		case errors.Is(err, io.EOF):
			return 0, &CorruptError{File: s.path, Offset: s.fr.off, Reason: "snapshot ends without its end marker"}
		case err != nil:
			return 0, err
		}
		if len(payload) == 0 {
			s.end = true
			if _, err := s.fr.next(); !errors.Is(err, io.EOF) {
				return 0, &CorruptError{File: s.path, Offset: s.fr.off, Reason: "data after the snapshot's end marker"}
			}
		}
		s.cur = payload
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// openSnapshot opens a snapshot file for streaming its payload.
func openSnapshot(path string, seq uint64) (*os.File, *snapshotReader, error) {
	f, fr, err := openFrames(path, snapshotMagic, seq)
	var d *damage
	if errors.As(err, &d) {
		return nil, nil, d.corrupt(path)
	}
	if err != nil {
		return nil, nil, err
	}
	return f, &snapshotReader{path: path, fr: fr}, nil
}

// verifySnapshot reads a whole snapshot checking every frame, so Open can
// choose a snapshot before the caller's state sees any of it.
func verifySnapshot(path string, seq uint64) error {
	f, sr, err := openSnapshot(path, seq)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, sr)
	return err
}

// deltaLink is the size of the link a delta's payload starts with: the
// sequence number of the snapshot or delta it follows (little-endian).
const deltaLink = 8

// readDeltaLink reads the link at the start of a delta's payload.
func readDeltaLink(path string, r io.Reader) (uint64, error) {
	var b [deltaLink]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			return 0, err
		}
		return 0, &CorruptError{File: path, Reason: fmt.Sprintf("delta too short to name the snapshot it follows: %v", err)}
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// verifyDelta reads a whole delta checking every frame, and returns the
// sequence number of the snapshot or delta it follows.
func verifyDelta(path string, seq uint64) (uint64, error) {
	f, sr, err := openSnapshot(path, seq)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	prev, err := readDeltaLink(path, sr)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, sr)
	return prev, err
}

// loadSnapshotFile streams a snapshot into load, then checks the rest of
// the file even if load stopped reading early.
// A delta's link is skipped (Open checked it). deltas is how many deltas
// follow it (SnapshotInfo.Deltas).
func loadSnapshotFile(path string, seq uint64, delta bool, deltas int, load func(io.Reader, SnapshotInfo) error) error {
	f, sr, err := openSnapshot(path, seq)
	if err != nil {
		return err
	}
	defer f.Close()
	info := SnapshotInfo{Content: sr.fr.hdr.content, MaxBytes: sr.fr.size - sr.fr.hdr.size, Deltas: deltas}
	if delta {
		if _, err := readDeltaLink(path, sr); err != nil {
			return err
		}
	}
	if err := load(sr, info); err != nil {
		return fmt.Errorf("journal: loading snapshot %s: %w", path, err)
	}
	if _, err := io.Copy(io.Discard, sr); err != nil {
		return err
	}
	return nil
}
