package journal

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// notified records the outcomes of Notify callbacks and the goroutine
// that ran them.
type notified struct {
	ch chan error
}

func newNotified() *notified { return newNotifiedCap(16) }

func newNotifiedCap(n int) *notified { return &notified{ch: make(chan error, n)} }

func (n *notified) f(err error) { n.ch <- err }

// next returns the next outcome, failing the test if none comes.
func (n *notified) next(t *testing.T, what string) error {
	t.Helper()
	select {
	case err := <-n.ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the callback never ran", what)
		return nil
	}
}

// none fails the test if a callback ran.
func (n *notified) none(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-n.ch:
		t.Fatalf("%s: a callback ran (%v)", what, err)
	default:
	}
}

// Notify calls back once the record is durable, with what Wait would
// return, and at once when that is already known.
func TestNotify(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	n := newNotified()
	t1 := j.Append([]byte("one"))
	j.Notify(t1, n.f) // kicks the flusher: nobody else waits
	if err := n.next(t, "Notify of a fresh record"); err != nil {
		t.Fatalf("outcome of a written record = %v", err)
	}
	if err := j.Check(t1); err != nil {
		t.Fatal(err)
	}
	j.mu.Lock()
	durable := j.durable
	j.mu.Unlock()
	if durable < t1 {
		t.Fatalf("callback ran before the record was durable (durable %d, ticket %d)", durable, t1)
	}

	// Already durable: called on the caller's goroutine, before Notify
	// returns.
	ran := false
	j.Notify(t1, func(err error) { ran = err == nil })
	if !ran {
		t.Fatal("Notify of a durable record did not call back at once with nil")
	}
	st := j.Stats()
	if st.Waiters < 1 {
		t.Errorf("Stats.Waiters = %d: the notice of a group is not counted", st.Waiters)
	}
}

// A round's notices run when that round is published, not the round
// before it, and learn what its Wait calls learn.
func TestNotifyFollowsItsRound(t *testing.T) {
	j, err := Open(testOptions(t.TempDir(), nil)) // no flusher: the test plays it
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.mu.Lock()
	j.last = 3
	j.mu.Unlock()
	j.takePending() // round 1..3 is being written
	j.mu.Lock()
	j.last = 4
	j.mu.Unlock()

	inRound, next := newNotified(), newNotified()
	j.Notify(2, inRound.f)
	if len(j.kick) != 0 {
		t.Fatal("a notice whose record is being written kicked the flusher")
	}
	j.Notify(4, next.f)
	if len(j.kick) != 1 {
		t.Fatal("a notice of the next round did not kick the flusher")
	}
	<-j.kick
	inRound.none(t, "round 1..3 in flight")

	if woke := j.publish(3, nil, false, true); woke != 0 {
		t.Errorf("publish reported %d sleeping waiters; notices do not sleep", woke)
	}
	if err := inRound.next(t, "round 1..3 published"); err != nil {
		t.Fatalf("outcome = %v", err)
	}
	next.none(t, "round 1..3 published")
	j.takePending()
	j.publish(4, nil, false, true)
	if err := next.next(t, "round 4 published"); err != nil {
		t.Fatalf("outcome = %v", err)
	}
	if got := j.Stats().Waiters; got != 2 {
		t.Errorf("Stats.Waiters = %d, want the 2 notices", got)
	}
}

// A failed write reaches the notices of its round and of the next, and
// every later Notify; Close reaches those never written with ErrClosed.
func TestNotifyFailureAndClose(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	appendWait(t, j, []byte("ok"))
	closeSegmentFiles(j) // the next write fails
	n := newNotified()
	j.Notify(j.Append([]byte("lost")), n.f)
	if err := n.next(t, "a failed write"); err == nil || !strings.Contains(err.Error(), segmentName(1)) {
		t.Fatalf("outcome of a failed write = %v, want the failure naming %s", err, segmentName(1))
	}
	j.Notify(j.Append([]byte("after the failure")), n.f)
	if err := n.next(t, "after the failure"); err == nil || errors.Is(err, ErrClosed) {
		t.Fatalf("outcome after the failure = %v, want the failure", err)
	}

	j2, err := Open(testOptions(t.TempDir(), nil)) // never replayed: nothing is written
	if err != nil {
		t.Fatal(err)
	}
	j2.mu.Lock()
	j2.ready, j2.last = true, 1 // as if appended, with no flusher to write it
	j2.mu.Unlock()
	j2.Notify(1, n.f)
	n.none(t, "before Close")
	j2.mu.Lock()
	j2.ready = false
	j2.mu.Unlock()
	j2.Close()
	j2.publish(0, nil, true, false) // what the flusher's last round does
	if err := n.next(t, "Close"); !errors.Is(err, ErrClosed) {
		t.Fatalf("outcome of a record never written = %v, want ErrClosed", err)
	}
	j2.Notify(j2.Append([]byte("after close")), n.f)
	if err := n.next(t, "after Close"); !errors.Is(err, ErrClosed) {
		t.Fatalf("outcome after Close = %v, want ErrClosed", err)
	}
}

// A notice may append and notify again from its callback (a reply that
// starts the next change), and the flusher goes on.
func TestNotifyFromACallback(t *testing.T) {
	j, _ := mustOpen(t, testOptions(t.TempDir(), nil))
	done := make(chan error, 1)
	j.Notify(j.Append([]byte("first")), func(err error) {
		if err != nil {
			done <- err
			return
		}
		j.Notify(j.Append([]byte("second")), func(err error) { done <- err })
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second notice never ran")
	}
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A round with more notices than the flusher runs itself still calls
// every one back, once.
func TestNotifyManyInARound(t *testing.T) {
	j, err := Open(testOptions(t.TempDir(), nil)) // no flusher: the test plays it
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	const many = 3*inlineNotices + 1
	j.mu.Lock()
	j.last = many
	j.mu.Unlock()
	j.takePending()
	n := newNotifiedCap(2 * many)
	for i := 1; i <= many; i++ {
		j.Notify(Ticket(i), n.f)
	}
	j.publish(many, nil, false, true)
	for i := 0; i < many; i++ {
		if err := n.next(t, "a round of many notices"); err != nil {
			t.Fatalf("outcome %d = %v", i, err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	n.none(t, "after every notice ran once")
}
