package pyimport

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ulikunitz/xz"
)

// timestampGlob matches what job_server.timestamp() puts in a file name
// (YYYYmmdd_HHMMSS.mmm, _TIMESTAMP_GLOB in job_server.py).
const timestampGlob = "????????_??????.???"

// compressionSuffixes are the suffixes zopen.py decompresses.
var compressionSuffixes = []string{".gz", ".bz2", ".xz"}

// openFile opens a Python file for reading, decompressing it by its
// suffix as zopen.py does (case-insensitive .gz, .bz2, .xz).
func openFile(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader
	switch lower := strings.ToLower(path); {
	case strings.HasSuffix(lower, ".gz"):
		zr, err := gzip.NewReader(br)
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			// Empty or cut inside the header: what gzip.open leaves
			// when the Python daemon is stopped before its buffered
			// writes reach the file. The content is cut short at 0.
			r = cutShort{}
		case err != nil:
			f.Close()
			return nil, fmt.Errorf("%s: not gzip data: %w", path, err)
		default:
			r = zr
		}
	case strings.HasSuffix(lower, ".bz2"):
		r = bzip2.NewReader(br)
	case strings.HasSuffix(lower, ".xz"):
		zr, err := xz.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: not xz data: %w", path, err)
		}
		r = zr
	default:
		r = br
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}

// Skipped is a snapshot Locate passed over, and why.
type Skipped struct {
	Path   string
	Reason string
}

// Found is what Locate found: the snapshot to load ("" when none is
// complete) and the action logs to replay after it, oldest first.
type Found struct {
	Snapshot string
	Logs     []string
	// Candidates is how many snapshot files matched the pattern.
	Candidates int
	Skipped    []Skipped
}

// Locate finds the newest complete snapshot the way JobQueue._do_recover
// does: files matching snapshotFormat (a Python format string with
// {timestamp}, e.g. DIR/snapshot_{timestamp}) or that name plus a
// compression suffix, that have an .md5 sidecar, newest modification time
// first; the first whose sidecar matches the MD5 of its uncompressed
// content wins. Snapshots with no, an empty or a mismatched sidecar, or
// that cannot be read, are Skipped.
//
// logFormat (may be "") names the action logs the same way; those whose
// timestamp is not older than the chosen snapshot's are replayed after it,
// in timestamp order. (A log is opened at the first change after a
// snapshot, so its timestamp follows that snapshot's; a log from the same
// millisecond is replayed too, since replaying a change twice is harmless
// and missing one is not.) When no snapshot file exists at all, every log
// is replayed from an empty queue; when snapshots exist but none is
// complete, nothing is.
func Locate(snapshotFormat, logFormat string) (*Found, error) {
	found := &Found{}
	snaps, err := matchFormat(snapshotFormat, true)
	if err != nil {
		return nil, err
	}
	found.Candidates = len(snaps)
	type cand struct {
		path  string
		ts    string
		mtime int64
	}
	var cands []cand
	for _, m := range snaps {
		if _, err := os.Stat(m.path + ".md5"); err != nil {
			found.Skipped = append(found.Skipped, Skipped{m.path, "no .md5 file next to it"})
			continue
		}
		fi, err := os.Stat(m.path)
		if err != nil {
			found.Skipped = append(found.Skipped, Skipped{m.path, err.Error()})
			continue
		}
		cands = append(cands, cand{m.path, m.ts, fi.ModTime().UnixNano()})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].mtime != cands[j].mtime {
			return cands[i].mtime > cands[j].mtime
		}
		return cands[i].path > cands[j].path
	})
	chosenTS := ""
	for _, c := range cands {
		if err := CheckMD5(c.path); err != nil {
			found.Skipped = append(found.Skipped, Skipped{c.path, err.Error()})
			continue
		}
		found.Snapshot, chosenTS = c.path, c.ts
		break
	}
	if logFormat == "" || (found.Snapshot == "" && len(snaps) > 0) {
		return found, nil
	}
	logs, err := matchFormat(logFormat, false)
	if err != nil {
		return nil, err
	}
	sort.Slice(logs, func(i, j int) bool {
		if logs[i].ts != logs[j].ts {
			return logs[i].ts < logs[j].ts
		}
		return logs[i].path < logs[j].path
	})
	for _, l := range logs {
		if l.ts >= chosenTS {
			found.Logs = append(found.Logs, l.path)
		}
	}
	return found, nil
}

// CheckMD5 verifies path against its .md5 sidecar (the hex MD5 of the
// uncompressed content, as JobQueue.snapshot writes it).
func CheckMD5(path string) error {
	text, err := os.ReadFile(path + ".md5")
	if err != nil {
		return fmt.Errorf("cannot read the .md5 file: %w", err)
	}
	want := strings.TrimSpace(string(text))
	if want == "" {
		return errors.New("the .md5 file is empty")
	}
	r, err := openFile(path)
	if err != nil {
		return err
	}
	defer r.Close()
	h := md5.New()
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("reading it: %w", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("MD5 mismatch: the .md5 file says %s, the content's is %s", want, got)
	}
	return nil
}

// match is one file matching a Python path format.
type match struct {
	path string
	ts   string // the {timestamp} part
}

// matchFormat lists the files matching a format with {timestamp}; with
// compressed, also those with a compression suffix added.
func matchFormat(format string, compressed bool) ([]match, error) {
	i := strings.Index(format, "{timestamp}")
	if i < 0 {
		return nil, fmt.Errorf("path format %q has no {timestamp}", format)
	}
	prefix, suffix := format[:i], format[i+len("{timestamp}"):]
	suffixes := []string{suffix}
	if compressed {
		for _, s := range compressionSuffixes {
			if !strings.HasSuffix(strings.ToLower(suffix), s) {
				suffixes = append(suffixes, suffix+s)
			}
		}
	}
	var out []match
	for _, sfx := range suffixes {
		paths, err := filepath.Glob(globEscape(prefix) + timestampGlob + globEscape(sfx))
		if err != nil {
			return nil, fmt.Errorf("path format %q: %w", format, err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, ".md5") && !strings.HasSuffix(sfx, ".md5") {
				continue
			}
			// The timestamp follows the prefix's file-name part (Glob may
			// clean the directory part).
			base, bp := filepath.Base(p), filepath.Base(prefix+"x")
			bp = bp[:len(bp)-1]
			out = append(out, match{path: p, ts: base[len(bp) : len(bp)+len(timestampGlob)]})
		}
	}
	return out, nil
}

// globEscape quotes the glob metacharacters of a literal path part.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cutShort is content that ends before its first byte.
type cutShort struct{}

func (cutShort) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
