package memory

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// TestTailReplayMatchesLive: replaying a journal of many records (applied
// on their own goroutine while the next are decoded) rebuilds the live
// state exactly.
func TestTailReplayMatchesLive(t *testing.T) {
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	ns := nsOf(t, b, "")
	fillOneByOne(t, ns, 3*tailBatch+17)
	ctx := context.Background()
	for range 40 {
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w"}, LeaseTime: time.Hour, MaxJobs: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as[1:] {
			if err := ns.UpdateWorkUnit(ctx, "s", a.Key.Bytes, coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := dumpAll(b)
	crash(t, b)
	b2 := openPersistent(t, dir, clock, 1<<40)
	defer b2.Close()
	if r := b2.wal.j.Report(); r.Records < 3*tailBatch || r.Snapshot != "" {
		t.Fatalf("replayed %d records (snapshot %q): the test needs several batches from the journal alone", r.Records, r.Snapshot)
	}
	if got := dumpAll(b2); got != want {
		t.Fatalf("replayed state differs:\n--- replayed\n%s\n--- live\n%s", got, want)
	}
}

// TestTailRecordThatDoesNotApplyStopsStart: a record that decodes but does
// not apply, followed by more records, stops the start with an error
// naming it, and the data directory is left exactly as it was (nothing
// cut, sealed or created), as when records were applied one by one.
func TestTailRecordThatDoesNotApplyStopsStart(t *testing.T) {
	dir := t.TempDir()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := openPersistent(t, dir, clock, 1<<40)
	fillOneByOne(t, nsOf(t, b, ""), 2*tailBatch)
	crash(t, b)

	j, err := journal.Open(journal.Options{Dir: dir, Sync: journal.SyncNone, ContentVersion: recordFormat})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Replay(func(io.Reader, journal.SnapshotInfo) error { return nil }, func([]byte, uint32) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var enc recordEncoder
	bad, err := enc.encode("", &opControlWorkSpec{Spec: "no such spec"})
	if err != nil {
		t.Fatal(err)
	}
	j.Append(bad)
	for i := range 5 {
		rec, _ := enc.encode(fmt.Sprint("later", i), nil)
		j.Append(rec)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	before := listFiles(t, dir)
	_, err = Open(context.Background(), Options{Clock: clock, DataDir: dir, Sync: journal.SyncNone, Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "does not apply") {
		t.Fatalf("Open: %v, want the record that does not apply", err)
	}
	if after := listFiles(t, dir); after != before {
		t.Fatalf("a failed start changed the data directory:\n--- before\n%s--- after\n%s", before, after)
	}
}

// fillOneByOne adds n units to spec "s" (created here), one record each.
func fillOneByOne(t *testing.T, ns *namespace, n int) {
	t.Helper()
	ctx := context.Background()
	if _, err := ns.SetWorkSpec(ctx, coordinate.Data{0xa1, 0x64, 'n', 'a', 'm', 'e', 0x61, 's'}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		in := []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: fmt.Sprintf("u%05d", i), Text: true}, Data: smallData}}
		if err := ns.AddWorkUnits(ctx, "s", in); err != nil {
			t.Fatal(err)
		}
	}
}

// listFiles describes dir's files: names, sizes and contents' lengths.
func listFiles(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, e := range es {
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "%s %d %x\n", e.Name(), len(b), b[:min(len(b), 64)])
	}
	return sb.String()
}
