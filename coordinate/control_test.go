package coordinate

import (
	"errors"
	"testing"
	"time"
)

func TestWorkSpecMetaApply(t *testing.T) {
	on, neg, w := true, -5, 3
	ival := -time.Second
	m := WorkSpecMeta{Weight: 20, Interval: time.Minute, MaxRunning: 2}
	before := m
	if err := m.Apply(WorkSpecControl{Paused: &on, Continuous: &on, Weight: &w}); !errors.Is(err, ErrCannotBeContinuous) {
		t.Fatalf("continuous without CanBeContinuous: %v", err)
	}
	if m != before {
		t.Errorf("a refused control changed %+v to %+v", before, m)
	}
	if err := m.Apply(WorkSpecControl{Paused: &on, Interval: &ival, MaxRunning: &neg, Weight: &w}); err != nil {
		t.Fatal(err)
	}
	if !m.Paused || m.Interval != 0 || m.MaxRunning != -5 || m.Weight != 3 || m.Continuous {
		t.Errorf("after control: %+v", m)
	}
	if want := ControlledInterval | ControlledMaxRunning | ControlledWeight; m.Controlled != want {
		t.Errorf("Controlled %b after interval, max_running, weight; want %b", m.Controlled, want)
	}
	m.CanBeContinuous = true
	if err := m.Apply(WorkSpecControl{Continuous: &on}); err != nil || !m.Continuous || m.Controlled&ControlledContinuous == 0 {
		t.Errorf("continuous with CanBeContinuous: %v, %+v", err, m)
	}
}
