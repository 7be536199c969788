package journal

import (
	"context"
	"errors"
	"io"
	"testing"
)

// Fail stops the journal as a failed write would: a record appended but
// not yet durable, and every record after, is never written and its Wait
// reports the failure; no snapshot is written (not even one whose records
// are all durable: the caller's state holds a change the journal lacks);
// what was durable before stays and is replayed.
func TestFailStopsTheJournal(t *testing.T) {
	dir := t.TempDir()
	j, _ := mustOpen(t, testOptions(dir, nil))
	appendWait(t, j, []byte("durable"))
	cause := errors.New("record could not be encoded")
	b := j.Rotate() // a boundary whose records are all durable
	j.Fail(cause)
	t1 := j.Append([]byte("after the failure"))
	if err := j.Wait(context.Background(), t1); !errors.Is(err, cause) {
		t.Fatalf("Wait after Fail = %v, want %v", err, cause)
	}
	if err := j.Check(j.Append([]byte("later"))); !errors.Is(err, cause) {
		t.Fatalf("Check after Fail = %v, want %v", err, cause)
	}
	wrote := false
	err := j.WriteSnapshot(context.Background(), b, func(io.Writer) error { wrote = true; return nil })
	if !errors.Is(err, cause) || wrote {
		t.Fatalf("WriteSnapshot after Fail = %v (writer called: %v), want %v without writing", err, wrote, cause)
	}
	j.Fail(errors.New("a second failure")) // the first is kept
	if err := j.Close(); !errors.Is(err, cause) {
		t.Fatalf("Close after Fail = %v, want %v", err, cause)
	}
	_, got := mustOpen(t, testOptions(dir, nil))
	if got.snapshot != nil {
		t.Fatalf("a snapshot was installed after Fail: %q", got.snapshot)
	}
	equalRecords(t, got.records, [][]byte{[]byte("durable")})
}
