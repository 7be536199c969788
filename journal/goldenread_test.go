package journal

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// goldenDir makes a data directory of golden files: name in the
// directory -> file in testdata.
func goldenDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, golden := range files {
		b, err := os.ReadFile(filepath.Join("testdata", golden))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The golden files are read back, not only written: a reader that drifts
// from the bytes older daemons left on disk fails here even when the
// writer is unchanged. Format 1 files (20-byte headers, no marks) have no
// writer any more; their golden files were made from the format
// description (format.go), independently of this package's code.
func TestGoldenFilesReplay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		files    map[string]string
		recover  bool // the golden delta has no golden segment after it
		snapshot string
		deltas   []string
		records  []string
		content  uint32
	}{
		{name: "format 2", files: map[string]string{
			segmentName(2): "format2-segment.bin", snapshotName(2): "format2-snapshot.bin"},
			snapshot: "snapshot state", records: []string{"three"}, content: 7},
		{name: "format 2 delta", files: map[string]string{
			snapshotName(2): "format2-snapshot.bin", deltaName(3): "format2-delta.bin"},
			recover: true, snapshot: "snapshot state", deltas: []string{"delta state"}, content: 7},
		{name: "format 1", files: map[string]string{
			segmentName(2): "format1-segment.bin", snapshotName(2): "format1-snapshot.bin"},
			snapshot: "old snapshot state", records: []string{"three", "four"}, content: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(goldenDir(t, tc.files), nil)
			opts.Recover = tc.recover
			j, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var snapshot string
			var deltas, records []string
			var contents []uint32
			err = j.ReplayWith(ReplayFuncs{
				Snapshot: func(r io.Reader, info SnapshotInfo) error {
					b, err := io.ReadAll(r)
					snapshot, contents = string(b), append(contents, info.Content)
					return err
				},
				Delta: func(r io.Reader, info SnapshotInfo) error {
					b, err := io.ReadAll(r)
					deltas, contents = append(deltas, string(b)), append(contents, info.Content)
					return err
				},
				Apply: func(rec []byte, content uint32) error {
					records, contents = append(records, string(rec)), append(contents, content)
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if snapshot != tc.snapshot || !slices.Equal(deltas, tc.deltas) || !slices.Equal(records, tc.records) {
				t.Errorf("replayed snapshot %q, deltas %q, records %q; want %q, %q, %q",
					snapshot, deltas, records, tc.snapshot, tc.deltas, tc.records)
			}
			for _, c := range contents {
				if c != tc.content {
					t.Errorf("content versions %v; want %d each", contents, tc.content)
					break
				}
			}
			if rep := j.Report(); len(rep.SetAside) > 0 || rep.TornTail != "" {
				t.Errorf("golden files replayed as damaged: %+v", rep)
			}
		})
	}
}
