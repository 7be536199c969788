// Package journal is the write-ahead journal of the memory backend: an
// append-only log of opaque records, written with group commit and
// compacted by snapshots, so that no acknowledged change is lost when the
// process is killed or the machine reboots. It knows nothing about what the
// records mean; the memory backend encodes its operations into them.
//
// # Files
//
// The data directory (Options.Dir, created 0700, locked with flock on the
// directory itself while a Journal is open) holds:
//
//	journal-<seq>.log        segments, numbered 1, 2, 3, ... (20 digits)
//	snapshot-<seq>.snap      the state as of the start of segment <seq>
//	snapshot-<seq>.delta     what changed between the snapshot or delta it
//	                         follows and the start of segment <seq>
//	snapshot-<seq>.*.tmp     a snapshot or delta being written (removed by Open)
//	*.damaged-<time>         files set aside by recovery (never read)
//
// Every segment and snapshot starts with a header (format.go; format 2: 64
// bytes): magic ("CDJL" for segments, "CDJS" for snapshots), format
// version, the file's sequence number, the caller's content version
// (Options.ContentVersion, handed back by Replay) and a CRC-32C; a
// segment's header also holds two mark slots (how far its records are
// acknowledged; whether it is sealed, i.e. continued by the next
// segment). Format 1 files (20-byte header, no marks) are still read.
// Then frames follow, each
//
//	length uint32 | crc uint32 | payload[length]
//
// little-endian, where crc is the CRC-32C (Castagnoli) of the four length
// bytes followed by the payload (so a run of zeros is never a valid frame).
// In a segment each frame is one record. A snapshot's bytes are cut into
// frames of at most 64 KiB and end with an empty frame as end marker. A
// delta is a snapshot file whose payload starts with the sequence number
// of the snapshot or delta it follows (8 bytes, little-endian), then the
// caller's bytes.
//
// # Guarantees
//
// Under SyncGroup, once Wait returns nil for a record, that record and
// every record appended before it are written and synced (an O_DSYNC
// write, or write + fdatasync where O_DSYNC is unavailable, on a segment
// preallocated with zeros, see segment.go); after a crash
// Replay returns them, in append order. Under SyncNone they are written to
// the operating system (they survive the process being killed, not a power
// loss). Under SyncInterval they are written too, and synced within
// Options.SyncInterval of being written (a power loss loses at most the
// records of the last interval). A record whose Wait has not returned may or may not survive.
//
// Recovery (Open then Replay) loads the newest complete snapshot, then the
// deltas after it in order (each must name the one before it: a missing or
// corrupt delta is damage, handled as a corrupt snapshot is), and replays
// every segment from the last one's number on, in order. A crash can tear
// only what was never acknowledged, and the marks say what was: after
// each acknowledged group the flusher writes the acknowledged end into
// the segment's header (synced with the next preallocation step or the
// segment's finish, or written back by the kernel: it may lag on disk,
// never claim more), and a segment is
// sealed once the segment continuing it exists (created first, so a crash
// in between leaves an unsealed segment followed by an empty one, which is
// accepted). Zeros from a frame boundary to the end of the last segment,
// at or past its mark, are its clean end (the preallocated space): cut off
// without a warning. A torn last record past the mark (a short header, a
// short payload, or a bad checksum with nothing but zeros or the end of
// file after it) is truncated with a warning naming file and offset.
// Records that stop before the mark, a sealed last segment, a snapshot
// without its segment, a gap in the numbering, a bad header or a corrupt
// snapshot make Open or Replay fail with a *CorruptError naming file and
// byte offset, unless Options.Recover is set: then everything readable
// before the damage is kept, the rest is renamed aside
// (".damaged-<time>") and logged, a missing segment is logged by name,
// and the journal goes on from there (the segment cut short is sealed at
// its new end, in a new mark generation). Only the last segment can be
// torn or end in zeros, because the journal syncs a segment and truncates
// it to its used length before it starts the next one. A corrupt newest
// snapshot makes Recover fall back to an older one left over by an
// interrupted cleanup, if any; segments that cannot follow the snapshot
// used are set aside. Every Replay starts a new segment; old segments are
// never appended to again (only sealed).
//
// If a write or fsync fails, the journal stops acknowledging: every Wait
// from then on returns that error (after a failed fsync the kernel may
// have dropped the data, so retrying could acknowledge lost records). The
// caller should stop serving and restart, which replays what is on disk.
//
// # Contract for callers
//
// Open, then Replay exactly once (also on an empty directory), then use.
//
// Appending: mutate your state and Append its record while holding your
// state lock, so that the journal's order is your apply order; release the
// lock; then Wait on the ticket before acknowledging the change to anyone.
// Append never blocks on disk, so holding the lock across it is cheap;
// Wait blocks, so never hold the lock across it. Concurrent Waits share
// syncs: one background flusher writes everything appended so far with
// one synchronous write, and wakes every waiter covered; what is
// appended meanwhile goes into the next group. Writes are started by Wait
// (and Flush, Rotate, Close), not by Append, unless 64 KiB are buffered.
// A caller may therefore skip Wait for a record whose loss in a crash it
// can tolerate: the record costs no sync of its own, and becomes durable
// with the next record anyone waits for, the journal being sequential.
// The record passed to Append may be reused once Append returns.
//
// Replaying: loadSnapshot receives the bytes your snapshot writer produced
// (it is called only if a snapshot exists), then apply receives each
// record in order. The record slice is reused after apply returns.
//
// Snapshotting (compaction): while holding your state lock (a lock that
// excludes every Append), call Rotate and capture your state (clone it, or
// freeze a copy-on-write version); release the lock; then call
// WriteSnapshot with the boundary and a function writing the captured
// state. The snapshot so corresponds exactly to "every record in segments
// before Boundary.Seq", and new appends continue into segment Seq while it
// is written. Snapshot(ctx, lock, capture) does these steps for you.
// WriteSnapshot writes a temporary file, fsyncs it, waits until every
// record before the boundary is durable, renames it into place, fsyncs the
// directory, and only then deletes the segments and snapshots it
// supersedes. A crash at any point leaves either the old snapshot with all
// its segments, or the new one with all of its segments.
//
// Deltas: WriteDelta instead of WriteSnapshot writes only what changed
// since the newest snapshot or delta on disk (a snapshot must exist);
// Replay hands it to ReplayFuncs.Delta after the snapshot and the deltas
// before it. Installing a delta deletes only the segments before it; the
// next WriteSnapshot deletes the snapshot and deltas before it. A crash at
// any point leaves a snapshot, its deltas and every later segment.
//
// Close lets a snapshot in progress finish, then writes and fsyncs
// whatever is still buffered.
//
// # Observing
//
// Report tells what Open and Replay found (snapshot loaded, records
// replayed, a truncated torn tail, files set aside or removed). Stats
// counts records, bytes, write rounds and fsyncs (records/round is the
// group-commit batch size). BytesSinceRotate tells how much journal a
// snapshot would compact away, a cue for when to take one.
package journal
