package coordinate

import (
	"slices"
	"testing"
	"time"
)

// AfterFunc callbacks run in Add, in time order, once due; stopped ones
// never run.
func TestFakeClockAfterFunc(t *testing.T) {
	c := NewFakeClock(time.Unix(0, 0))
	var ran []string
	c.AfterFunc(3*time.Second, func() { ran = append(ran, "3s") })
	c.AfterFunc(time.Second, func() { ran = append(ran, "1s") })
	stop := c.AfterFunc(2*time.Second, func() { ran = append(ran, "2s") })
	c.Add(999 * time.Millisecond)
	if len(ran) != 0 {
		t.Fatalf("ran early: %v", ran)
	}
	if !stop() {
		t.Error("stop of a pending callback reported false")
	}
	c.Add(5 * time.Second)
	if !slices.Equal(ran, []string{"1s", "3s"}) {
		t.Errorf("ran %v, want [1s 3s]", ran)
	}
	if stop() {
		t.Error("second stop reported true")
	}
	// A callback may re-arm itself through the clock.
	n := 0
	var tick func()
	tick = func() {
		n++
		c.AfterFunc(time.Second, tick)
	}
	c.AfterFunc(time.Second, tick)
	c.Add(time.Second)
	c.Add(time.Second)
	if n != 2 {
		t.Errorf("re-arming callback ran %d times, want 2", n)
	}
}
