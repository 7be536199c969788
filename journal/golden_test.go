package journal

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of the current journal format")

// TestFormatGolden pins the bytes of journal format 2: a finished segment
// (header, mark, seal, frames) and a snapshot file. A change needs a new
// format version and a reader for this one.
func TestFormatGolden(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir, nil)
	opts.ContentVersion = 7
	j, _ := mustOpen(t, opts)
	appendWait(t, j, []byte("one"), []byte("two"))
	var mu sync.Mutex
	err := j.Snapshot(context.Background(), &mu, func() func(io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write([]byte("snapshot state")); return err }
	})
	if err != nil {
		t.Fatal(err)
	}
	appendWait(t, j, []byte("three"))
	j.Close()
	for _, f := range []struct{ name, golden string }{
		{segmentName(2), "format2-segment.bin"},
		{snapshotName(2), "format2-snapshot.bin"},
	} {
		got, err := os.ReadFile(join(dir, f.name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", f.golden)
		if *updateGolden {
			os.MkdirAll("testdata", 0o755)
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s changed:\n got %x\nwant %x", f.name, got, want)
		}
	}
}
