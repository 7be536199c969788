package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// TestGetWorkWhileWorkerRecordExpires: a claim lists the unit as
// outstanding for its worker's record (worker_unit), joined as of the
// claim's snapshot; another daemon's heartbeat deleting that record as
// expired meanwhile made the insert violate worker_unit's foreign key,
// and get_work failed. It must succeed (the unit then is simply not
// listed for a worker that is no more).
func TestGetWorkWhileWorkerRecordExpires(t *testing.T) {
	url := freshSchema(t)
	ctx := t.Context()
	_, ns1 := openBackend(t, url, Options{MaxConns: 6})
	_, ns2 := openBackend(t, url, Options{MaxConns: 6})
	raw, _ := cbor.Marshal(map[string]any{"name": "s"})
	if _, err := ns1.SetWorkSpec(ctx, raw); err != nil {
		t.Fatal(err)
	}
	var in []coordinate.WorkUnitInput
	for i := range 20000 {
		in = append(in, coordinate.WorkUnitInput{Key: textName(fmt.Sprintf("u%05d", i)), Data: coordinate.EmptyMap})
	}
	if err := ns1.AddWorkUnits(ctx, "s", in); err != nil {
		t.Fatal(err)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	stop := make(chan struct{})
	for g := range 4 {
		wg.Add(1)
		go func() { // other workers' heartbeats delete expired records
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := ns2.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: textName(fmt.Sprintf("o%d", g)), Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Minute}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var cw sync.WaitGroup
	for g := range 6 {
		cw.Add(1)
		go func() {
			defer cw.Done()
			w := textName(fmt.Sprintf("w%d", g))
			for i := range 100 {
				if err := ns1.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: w, Mode: coordinate.Null, Data: coordinate.EmptyMap, Expire: time.Duration(i%4) * time.Millisecond}); err != nil {
					t.Error(err)
					return
				}
				if _, err := ns1.GetWork(ctx, coordinate.WorkRequest{Worker: w, MaxJobs: 1 + i%3, LeaseTime: time.Hour}); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	cw.Wait()
	close(stop)
	wg.Wait()
	for i, err := range errs {
		if i < 3 {
			t.Error(err)
		}
	}
	if len(errs) > 0 {
		t.Errorf("%d get_work calls failed", len(errs))
	}
}
