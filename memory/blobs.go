package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/coordinated/coordinated/journal"
)

// The blob store (docs/persistence.md, "Blobs"): unit data of at least
// blobThreshold bytes is kept in the data directory once, as
// blobs/<first two hex digits>/<sha256 in hex>, and a snapshot holds its
// hash instead of the bytes. So a snapshot rewrites only the large data
// that is new since the last one, not all of it.
//
// A blob is written and fsynced before the snapshot referring to it is
// installed, and never rewritten (its name is its content). Blobs the
// newest installed snapshot does not refer to are deleted after it is
// installed, never before. Journal records still carry the data inline.

// blobThreshold is the smallest unit data kept as a blob.
const blobThreshold = 64 << 10

// blobDirName is the blob store's directory inside the data directory.
const blobDirName = "blobs"

type blobHash = [sha256.Size]byte

// dataKey identifies unit data by its backing array: unit data is never
// changed in place, so the same bytes always have the same hash. Holding
// the pointer keeps the array alive, so an address is never reused for
// other bytes while it is a key.
type dataKey struct {
	p *byte
	n int
}

func keyOf(b []byte) dataKey { return dataKey{&b[0], len(b)} }

// blobStore is the blob directory of a persistent backend. Only the
// snapshot (under Backend.snapMu) uses it.
type blobStore struct {
	dir string
	log *slog.Logger
	// threshold is blobThreshold; the write-amplification benchmark
	// raises it to measure snapshots with all data inline (version 1).
	threshold int
	// known maps the data of the last full snapshot and the deltas after
	// it to its hash, so unchanged data is neither hashed nor written
	// again. It keeps that data alive until the next full snapshot
	// replaces it: data replaced meanwhile stays, at most what the deltas
	// after one full snapshot referred to (snapchain.go bounds them).
	known map[dataKey]blobHash
	// written counts the bytes of blob files written, hashed the bytes
	// hashed (tests, stats).
	written, hashed int64
}

func newBlobStore(dataDir string, log *slog.Logger) *blobStore {
	return &blobStore{dir: filepath.Join(dataDir, blobDirName), log: log, threshold: blobThreshold, known: map[dataKey]blobHash{}}
}

func (s *blobStore) path(h blobHash) string {
	x := hex.EncodeToString(h[:])
	return filepath.Join(s.dir, x[:2], x)
}

// blobBatch gathers the blobs of one snapshot as its units go by.
type blobBatch struct {
	s     *blobStore
	refs  map[dataKey]blobHash // the snapshot's references
	dirty map[string]bool      // directories with new entries
}

func (s *blobStore) batch() *blobBatch {
	return &blobBatch{s: s, refs: map[dataKey]blobHash{}, dirty: map[string]bool{}}
}

// add makes sure data, if it is large enough, is in the store and in
// b.refs.
func (b *blobBatch) add(d []byte) error {
	s := b.s
	if len(d) < max(s.threshold, blobThreshold) {
		return nil
	}
	k := keyOf(d)
	if _, ok := b.refs[k]; ok {
		return nil
	}
	h, ok := s.known[k]
	if !ok {
		h = sha256.Sum256(d)
		s.hashed += int64(len(d))
		if err := s.put(h, d, b.dirty); err != nil {
			return err
		}
	}
	b.refs[k] = h
	return nil
}

// commit makes the new blob names durable (before a snapshot refers to
// them) and adds b's references to the store's memory for the next
// snapshot; a full snapshot's references replace it.
func (b *blobBatch) commit(full bool) error {
	s := b.s
	if len(b.dirty) > 0 {
		dirs := []string{filepath.Dir(s.dir), s.dir}
		for d := range b.dirty {
			dirs = append(dirs, d)
		}
		if err := syncDirs(dirs...); err != nil {
			return fmt.Errorf("blob store: %w", err)
		}
		clear(b.dirty)
	}
	if full {
		s.known = b.refs
	} else {
		maps.Copy(s.known, b.refs)
	}
	return nil
}

// put writes data under hash h unless a file of the right size is there
// (a blob is never rewritten; a damaged one is found when it is read).
// The file is fsynced; its directory is added to dirty, for the caller to
// fsync once for all blobs. It is added even when the file was there: put
// is only asked for blobs no committed snapshot refers to (blobBatch.add),
// and such a file may be one a failed snapshot wrote, whose name was never
// made durable.
func (s *blobStore) put(h blobHash, data []byte, dirty map[string]bool) error {
	path := s.path(h)
	dir := filepath.Dir(path)
	if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(data)) {
		dirty[dir] = true
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	f, err := os.CreateTemp(dir, "tmp-*")
	if err != nil {
		return fmt.Errorf("blob store: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("blob store: writing %s: %w", path, err)
	}
	dirty[dir] = true
	s.written += int64(len(data))
	return nil
}

// read returns the blob h of size n, checking its hash.
func (s *blobStore) read(h blobHash, n int) ([]byte, error) {
	path := s.path(h)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", path, err)
	}
	if len(b) != n || sha256.Sum256(b) != h {
		return nil, fmt.Errorf("blob %s: %d bytes whose hash does not match its name (want %d bytes)", path, len(b), n)
	}
	return b, nil
}

// collect deletes the blobs (and leftover temporary files) that refs, the
// references of the snapshot just installed, does not hold. Failures only
// cost disk space, so they are logged.
func (s *blobStore) collect(refs map[dataKey]blobHash) {
	keep := make(map[string]bool, len(refs))
	for _, h := range refs {
		keep[hex.EncodeToString(h[:])] = true
	}
	removed := 0
	err := filepath.WalkDir(s.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || keep[d.Name()] {
			return nil
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.log.Warn("could not remove an unreferenced blob", "file", path, "err", err)
			return nil
		}
		if !strings.HasPrefix(d.Name(), "tmp-") {
			removed++
		}
		return nil
	})
	if err != nil {
		s.log.Warn("could not list the blob store to remove unreferenced blobs", "err", err)
	}
	if removed > 0 {
		s.log.Info("unreferenced blobs removed", "count", removed)
	}
}

// syncDirs fsyncs directories, so new entries in them are durable.
func syncDirs(dirs ...string) error {
	for _, dir := range dirs {
		if err := journal.SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}
