package coordinate

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestApplyUpdateTable(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	old := now.Add(-time.Hour)
	w := &Name{Bytes: "w1", Text: true}
	w2 := &Name{Bytes: "w2", Text: true}
	lt := func(d time.Duration) *time.Duration { return &d }
	start := map[Status]UnitState{
		StatusAvailable: {Status: StatusAvailable},
		StatusPending:   {Status: StatusPending, Expiration: now.Add(time.Minute), Worker: w},
		StatusFinished:  {Status: StatusFinished, Expiration: old, Worker: w},
		StatusFailed:    {Status: StatusFailed, Expiration: old, Worker: w},
	}
	type want struct {
		status Status
		exp    time.Time
		worker *Name
		eff    UpdateEffect
	}
	tests := []struct {
		from Status
		upd  WorkUnitUpdate
		want want
	}{
		// lease time only
		{StatusAvailable, WorkUnitUpdate{LeaseTime: lt(time.Minute)}, want{StatusAvailable, now.Add(time.Minute), nil, UpdateEffect{}}},
		{StatusPending, WorkUnitUpdate{LeaseTime: lt(time.Hour)}, want{StatusPending, now.Add(time.Hour), w, UpdateEffect{Leased: true}}},
		{StatusPending, WorkUnitUpdate{LeaseTime: lt(-time.Second)}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{Released: true, LeaseEnded: now.Add(-time.Second)}}},
		{StatusPending, WorkUnitUpdate{LeaseTime: lt(0)}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{Released: true, LeaseEnded: now}}},
		{StatusPending, WorkUnitUpdate{LeaseTime: lt(100000 * time.Second)}, want{StatusPending, now.Add(300 * time.Second), w, UpdateEffect{Leased: true}}},
		{StatusFinished, WorkUnitUpdate{LeaseTime: lt(time.Minute)}, want{StatusFinished, now.Add(time.Minute), w, UpdateEffect{}}},
		{StatusFailed, WorkUnitUpdate{LeaseTime: lt(time.Minute)}, want{StatusFailed, now.Add(time.Minute), w, UpdateEffect{}}},
		// status 1
		{StatusAvailable, WorkUnitUpdate{Status: StatusAvailable}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{}}},
		{StatusPending, WorkUnitUpdate{Status: StatusAvailable}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{Released: true}}},
		{StatusFinished, WorkUnitUpdate{Status: StatusAvailable, LeaseTime: lt(0)}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{Released: true}}},
		{StatusFailed, WorkUnitUpdate{Status: StatusAvailable}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{Released: true}}},
		// status 3
		{StatusAvailable, WorkUnitUpdate{Status: StatusPending}, want{StatusPending, now.Add(300 * time.Second), nil, UpdateEffect{Leased: true}}},
		{StatusAvailable, WorkUnitUpdate{Status: StatusPending, LeaseTime: lt(time.Minute)}, want{StatusPending, now.Add(time.Minute), nil, UpdateEffect{Leased: true}}},
		{StatusAvailable, WorkUnitUpdate{Status: StatusPending, LeaseTime: lt(-time.Minute)}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{}}},
		{StatusAvailable, WorkUnitUpdate{Status: StatusPending, Worker: w2}, want{StatusPending, now.Add(300 * time.Second), nil, UpdateEffect{Leased: true}}},
		{StatusPending, WorkUnitUpdate{Status: StatusPending}, want{StatusPending, now.Add(time.Minute), w, UpdateEffect{}}},
		{StatusPending, WorkUnitUpdate{Status: StatusPending, LeaseTime: lt(time.Hour)}, want{StatusPending, now.Add(time.Hour), w, UpdateEffect{Leased: true}}},
		{StatusPending, WorkUnitUpdate{Status: StatusPending, Worker: w2}, want{StatusPending, now.Add(time.Minute), w2, UpdateEffect{Leased: true}}},
		{StatusPending, WorkUnitUpdate{Status: StatusPending, LeaseTime: lt(-1)}, want{StatusAvailable, time.Time{}, nil, UpdateEffect{Released: true, LeaseEnded: now.Add(-1)}}},
		{StatusFinished, WorkUnitUpdate{Status: StatusPending}, want{StatusPending, now.Add(300 * time.Second), nil, UpdateEffect{Leased: true}}},
		{StatusFailed, WorkUnitUpdate{Status: StatusPending, LeaseTime: lt(time.Minute)}, want{StatusPending, now.Add(time.Minute), nil, UpdateEffect{Leased: true}}},
		// status 4
		{StatusAvailable, WorkUnitUpdate{Status: StatusFinished}, want{StatusFinished, now, nil, UpdateEffect{Chain: true, Completed: true}}},
		{StatusPending, WorkUnitUpdate{Status: StatusFinished}, want{StatusFinished, now, w, UpdateEffect{Chain: true, Completed: true}}},
		{StatusFinished, WorkUnitUpdate{Status: StatusFinished}, want{StatusFinished, old, w, UpdateEffect{}}},
		{StatusFailed, WorkUnitUpdate{Status: StatusFinished}, want{StatusFinished, now, w, UpdateEffect{Chain: true, Completed: true}}},
		// status 5
		{StatusAvailable, WorkUnitUpdate{Status: StatusFailed}, want{StatusFailed, now, nil, UpdateEffect{Completed: true}}},
		{StatusPending, WorkUnitUpdate{Status: StatusFailed}, want{StatusFailed, now, w, UpdateEffect{Completed: true}}},
		{StatusFinished, WorkUnitUpdate{Status: StatusFailed}, want{StatusFinished, old, w, UpdateEffect{}}},
		{StatusFailed, WorkUnitUpdate{Status: StatusFailed}, want{StatusFailed, old, w, UpdateEffect{}}},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%v+status%d+lease%v+worker%v", tc.from, tc.upd.Status, tc.upd.LeaseTime != nil, tc.upd.Worker != nil)
		t.Run(name, func(t *testing.T) {
			st := start[tc.from]
			st.Data = Data{0x01}
			tc.upd.Data = Data{0x02}
			got, eff, err := ApplyUpdate(st, tc.upd, now)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.want.status || !got.Expiration.Equal(tc.want.exp) || eff != tc.want.eff {
				t.Errorf("got status %v exp %v eff %+v, want %v %v %+v", got.Status, got.Expiration, eff, tc.want.status, tc.want.exp, tc.want.eff)
			}
			if (got.Worker == nil) != (tc.want.worker == nil) || (got.Worker != nil && *got.Worker != *tc.want.worker) {
				t.Errorf("worker = %v, want %v", got.Worker, tc.want.worker)
			}
			if !bytes.Equal(got.Data, Data{0x02}) {
				t.Errorf("data = %x, want replaced", got.Data)
			}
		})
	}
}

func TestApplyUpdateRejects(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	st := UnitState{Status: StatusPending, Data: Data{0x01}, Expiration: now.Add(time.Minute)}
	got, eff, err := ApplyUpdate(st, WorkUnitUpdate{Data: Data{0x02}}, now)
	if !errors.Is(err, ErrNothingToDo) {
		t.Fatalf("data-only update: err = %v, want ErrNothingToDo", err)
	}
	if !bytes.Equal(got.Data, Data{0x01}) || eff != (UpdateEffect{}) {
		t.Errorf("rejected update changed state: %+v %+v", got, eff)
	}
	for _, s := range []Status{StatusBlocked, 6, -1} {
		if _, _, err := ApplyUpdate(st, WorkUnitUpdate{Status: s}, now); !errors.Is(err, ErrInvalidWorkUnit) {
			t.Errorf("status %d: err = %v, want ErrInvalidWorkUnit", s, err)
		}
	}
}

func TestApplyUpdateKeepsDataWhenAbsent(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	st := UnitState{Status: StatusPending, Data: Data{0x01}, Expiration: now.Add(time.Minute)}
	got, _, err := ApplyUpdate(st, WorkUnitUpdate{Status: StatusFinished}, now)
	if err != nil || !bytes.Equal(got.Data, Data{0x01}) {
		t.Errorf("got %+v, %v; want data kept", got, err)
	}
}

func TestApplyUpdateBlockedStaysBlocked(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	st := UnitState{Status: StatusBlocked}
	got, eff, err := ApplyUpdate(st, WorkUnitUpdate{Status: StatusAvailable}, now)
	if err != nil || got.Status != StatusBlocked || eff != (UpdateEffect{}) {
		t.Errorf("retry of blocked unit: %+v %+v %v", got, eff, err)
	}
	got, eff, err = ApplyUpdate(st, WorkUnitUpdate{Status: StatusFinished}, now)
	if err != nil || got.Status != StatusFinished || !eff.Chain {
		t.Errorf("finish of blocked unit: %+v %+v %v", got, eff, err)
	}
}
