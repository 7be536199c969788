package journal

import (
	"bytes"
	"os"
	"testing"
)

// FuzzReplay: any bytes after a valid segment header, replayed as the
// last segment, either replay or fail with an error (never a panic, never
// an allocation beyond the file), and with Recover they always replay,
// every record delivered being a complete frame of the file.
// scripts/test.sh runs it for a few seconds, `make fuzz` for longer.
func FuzzReplay(f *testing.F) {
	var seed []byte
	for _, r := range numbered("record-", 0, 3) {
		seed = appendFrame(seed, r)
	}
	f.Add(seed, uint16(len(seed)))
	f.Add(append(seed, make([]byte, 64)...), uint16(10))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4}, uint16(0))
	f.Fuzz(func(t *testing.T, body []byte, acked uint16) {
		dir := t.TempDir()
		seg := encodeHeader(segmentMagic, 1, 0)
		s := encodeSlot(1, mark{end: headerSize + int64(acked)})
		copy(seg[slotOffset:], s[:])
		path := join(dir, segmentName(1))
		if err := os.WriteFile(path, append(seg, body...), 0o600); err != nil {
			t.Fatal(err)
		}
		opts := testOptions(dir, nil)
		opts.Preallocate = -1 // no zeros to write: iterations stay cheap
		j, _, err := openReplay(t, opts)
		if err == nil {
			j.Close() // replayed (possibly repairing a torn tail)
			return
		}
		opts.Recover = true
		j, got, err := openReplay(t, opts)
		if err != nil {
			t.Fatalf("Recover failed: %v", err)
		}
		defer j.Close()
		for _, r := range got.records {
			if !bytes.Contains(body, r) {
				t.Fatalf("replayed a record that is not in the file: %x", r)
			}
		}
	})
}
