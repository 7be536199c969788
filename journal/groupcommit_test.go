package journal

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
)

// TestGroupCommitManyAppenders runs concurrent appenders that each wait on
// their own record. Every waiter must be released, each record must be in
// the segment file as soon as its Wait returns, and a crash copy taken
// while the journal is still open must replay every record in append order.
func TestGroupCommitManyAppenders(t *testing.T) {
	for _, policy := range []SyncPolicy{SyncGroup, SyncNone} {
		t.Run(policy.String(), func(t *testing.T) {
			const writers, perWriter = 8, 40
			dir := t.TempDir()
			opts := testOptions(dir, nil)
			opts.Sync = policy
			j, _ := mustOpen(t, opts)
			segPath := join(dir, segmentName(1))

			var (
				stateMu sync.Mutex // the caller's state lock: orders appends
				next    int        // global order, embedded in each record
				wg      sync.WaitGroup
				errs    = make(chan error, writers)
			)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perWriter {
						stateMu.Lock()
						rec := fmt.Appendf(nil, "%06d w%d i%d", next, w, i)
						next++
						tk := j.Append(rec)
						stateMu.Unlock()
						if err := j.Wait(context.Background(), tk); err != nil {
							errs <- err
							return
						}
						if !segmentHolds(t, segPath, rec) {
							errs <- fmt.Errorf("record %q not in %s after its Wait returned", rec, segPath)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}

			crash := copyDir(t, dir) // as if killed now, before Close
			_, got := mustOpen(t, testOptions(crash, nil))
			if len(got.records) != writers*perWriter {
				t.Fatalf("replayed %d records, want %d", len(got.records), writers*perWriter)
			}
			for i, rec := range got.records {
				if want := fmt.Sprintf("%06d ", i); !bytes.HasPrefix(rec, []byte(want)) {
					t.Fatalf("record %d is %q: replay order differs from append order", i, rec)
				}
			}
		})
	}
}

// segmentHolds scans a segment file for a record.
func segmentHolds(t testing.TB, path string, rec []byte) bool {
	f, fr, err := openFrames(path, segmentMagic, 1)
	if err != nil {
		t.Errorf("reading %s: %v", path, err)
		return false
	}
	defer f.Close()
	for {
		got, err := fr.next()
		if err == io.EOF {
			return false
		}
		if err != nil {
			// The flusher may be mid-write past our record; what was
			// read so far did not contain it.
			return false
		}
		if bytes.Equal(got, rec) {
			return true
		}
	}
}

// A round's end wakes only the waiters it covers, and a waiter whose
// record is already being written does not kick the flusher: otherwise
// every group would wake the next group's waiters for nothing and each of
// them would start an empty round. publish reports whether the round had
// waiters (the flusher then yields to them). The flusher is not started (no Replay),
// so the test plays its part: take a round, publish it.
func TestWaitersSleepOnTheirRound(t *testing.T) {
	j, err := Open(testOptions(t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	settle := func() {
		for range 1000 {
			runtime.Gosched()
		}
	}

	j.mu.Lock()
	j.last = 3
	j.mu.Unlock()
	j.takePending() // round 1..3 is being written
	j.mu.Lock()
	j.last = 4 // appended meanwhile: the next round's
	j.mu.Unlock()

	next := make(chan error, 1)
	go func() { next <- j.Wait(ctx, 4) }()
	for len(j.kick) == 0 { // its waiter kicks: nobody else would write it
		runtime.Gosched()
	}
	<-j.kick
	inRound := make(chan error, 1)
	go func() { inRound <- j.Wait(ctx, 2) }()
	for { // until it sleeps on the round being written
		j.mu.Lock()
		n := j.roundWaiters
		j.mu.Unlock()
		if n == 1 {
			break
		}
		runtime.Gosched()
	}
	if len(j.kick) != 0 {
		t.Fatal("a waiter whose record is being written kicked the flusher")
	}

	if j.publish(3, nil, false, false) != 1 {
		t.Error("publish of a round one Wait slept on did not report that one waiter")
	}
	if err := <-inRound; err != nil {
		t.Fatalf("Wait(2) after its round was published = %v", err)
	}
	settle()
	if len(j.kick) != 0 {
		t.Fatal("publishing round 1..3 woke the waiter of ticket 4, which kicked again")
	}
	select {
	case err := <-next:
		t.Fatalf("Wait(4) returned %v before its round was written", err)
	default:
	}

	j.takePending()
	if j.publish(4, nil, false, false) != 1 {
		t.Error("publish of the round Wait(4) slept on did not report that one waiter")
	}
	if err := <-next; err != nil {
		t.Fatalf("Wait(4) after its round was published = %v", err)
	}
	j.takePending()
	if j.publish(4, nil, false, false) != 0 {
		t.Error("publish of a round nobody waited for reported a waiter")
	}
}
