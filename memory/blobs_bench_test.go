package memory

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// BenchmarkSnapshotWriteAmplification adds COORD_BENCH_BLOB_UNITS units
// (default 200) of 1 MB data one at a time, taking a snapshot every 64 MiB
// of journal (as -snapshot-bytes does by default), and reports the bytes
// written to disk (journal, snapshot files, blobs) per byte of unit data
// added (write-amp) and the bytes written by snapshots alone
// (snapshot-MB). "inline" keeps all data in the snapshot (snapshot
// version 1's behaviour), "blobs" puts large data in the blob store.
//
//	go test -run '^$' -bench SnapshotWriteAmplification -benchtime 1x ./memory/
func BenchmarkSnapshotWriteAmplification(b *testing.B) {
	units := 200
	if s := os.Getenv("COORD_BENCH_BLOB_UNITS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("COORD_BENCH_BLOB_UNITS=%q: want a positive count", s)
		}
		units = n
	}
	for _, mode := range []string{"inline", "blobs"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				snapBytes, journalBytes, added := writeAmplification(b, units, mode == "inline")
				b.ReportMetric(float64(snapBytes+journalBytes)/float64(added), "write-amp")
				b.ReportMetric(float64(snapBytes)/1e6, "snapshot-MB")
			}
		})
	}
}

func writeAmplification(b *testing.B, units int, inline bool) (snapBytes, journalBytes, added int64) {
	ctx := context.Background()
	be, err := Open(ctx, Options{Clock: coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		DataDir: b.TempDir(), Sync: journal.SyncNone, SnapshotBytes: 1 << 40, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	if inline {
		be.wal.blobs.threshold = math.MaxInt
	}
	nsi, _ := be.Namespace(ctx, "")
	ns := nsi.(*namespace)
	defineSpec(b, ctx, ns, "s")
	snap := func() {
		st, err := be.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		snapBytes += st.Bytes + st.BlobBytes
	}
	var sinceSnap int64
	for i := range units {
		d := bigData(1_000_000, byte(i))
		binary.BigEndian.PutUint64(d[8:], uint64(i)) // every unit's data differs
		if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: fmt.Sprintf("u%05d", i), Text: true}, Data: d}}); err != nil {
			b.Fatal(err)
		}
		added += int64(len(d))
		if sinceSnap += int64(len(d)); sinceSnap >= DefaultSnapshotBytes {
			snap()
			sinceSnap = 0
		}
	}
	snap()
	return snapBytes, int64(be.JournalStats().Bytes), added
}
