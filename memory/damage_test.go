package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// The damage probes of docs/persistence.md through the backend: 400 acknowledged adds,
// then the disk as kill -9 leaves it, then damage that removes
// acknowledged records. Each must stop Open; -recover starts and says
// what it dropped.
func TestAcknowledgedAddsNeverVanishSilently(t *testing.T) {
	ctx := context.Background()
	clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	b := openPersistent(t, dir, clock, 0)
	defineSpec(t, ctx, nsOf(t, b, ""), "s")
	if err := b.Close(); err != nil { // clean stop: snapshot, then a restart
		t.Fatal(err)
	}
	b = openPersistent(t, dir, clock, 0)
	ns := nsOf(t, b, "")
	for i := range 400 {
		if err := ns.AddWorkUnits(ctx, "s", []coordinate.WorkUnitInput{{Key: coordinate.Name{Bytes: fmt.Sprint(i), Text: true}}}); err != nil {
			t.Fatal(err)
		}
	}
	killed := copyDataDir(t, dir)
	crash(t, b)

	segs, _ := filepath.Glob(filepath.Join(killed, "journal-*.log"))
	sort.Strings(segs)
	newest := segs[len(segs)-1]
	data, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	used := len(data) // the records end where the preallocated zeros start
	for used > 0 && data[used-1] == 0 {
		used--
	}
	for name, damage := range map[string]func(dir, seg string){
		"truncated mid-segment":  func(_, seg string) { os.Truncate(seg, int64(used/2)) },
		"newest segment deleted": func(_, seg string) { os.Remove(seg) },
	} {
		t.Run(name, func(t *testing.T) {
			d := copyDataDir(t, killed)
			damage(d, filepath.Join(d, filepath.Base(newest)))
			_, err := Open(ctx, Options{Clock: clock, DataDir: d, Sync: journal.SyncNone})
			if !errors.Is(err, journal.ErrCorrupt) {
				t.Fatalf("Open after %s: %v, want a journal corruption error", name, err)
			}
			b, err := Open(ctx, Options{Clock: clock, DataDir: d, Sync: journal.SyncNone, Recover: true})
			if err != nil {
				t.Fatalf("Open with Recover: %v", err)
			}
			b.Close()
		})
	}
}
