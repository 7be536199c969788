package journal

import (
	"errors"
	"os"
)

// removeStep is how much of a large file one truncation frees before the
// file is unlinked (removeFile).
const removeStep = 32 << 20

// removeFile deletes path; a missing file is not an error. A file larger
// than removeStep is first cut down removeStep at a time. On ext4,
// unlinking a whole superseded snapshot (350 MB at ten million units)
// frees all its extents in one filesystem transaction (71 ms measured),
// and the syncs of finishes waiting meanwhile queued behind it; in steps
// each commit frees a little (docs/persistence.md, "Snapshots and the finishes'
// syncs"). If a step fails the file is simply removed.
func removeFile(path string) error {
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		if st, err := f.Stat(); err == nil {
			for size := st.Size(); size > removeStep; {
				size -= removeStep
				if f.Truncate(size) != nil {
					break
				}
			}
		}
		f.Close()
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
