package coordinatetest

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// concurrencyTests check that every Namespace method is atomic: run them
// under the race detector.
var concurrencyTests = []test{
	{"GetWorkNeverTwice", testConcurrentGetWork},
	{"AddAndFinish", testConcurrentAddAndFinish},
	{"Mixed", testConcurrentMixed},
	{"DependOnWhileCompleting", testConcurrentDependOnWhileCompleting},
}

// testConcurrentDependOnWhileCompleting adds units depending on a unit at
// the same moment that unit finishes (or fails): whichever comes first,
// the dependent must end up AVAILABLE (FAILED), never left BLOCKED on a
// completed unit.
func testConcurrentDependOnWhileCompleting(e *env) {
	const rounds = 40
	e.spec(m{"name": "s"})
	for i := 0; i < rounds; i++ {
		target := fmt.Sprintf("t%02d", i)
		e.addKeys("s", target)
		a := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 1, LeaseTime: 3600e9})
		if len(a) != 1 || a[0].Key.Bytes != target {
			e.t.Fatalf("round %d: GetWork = %v, want %s", i, attemptKeys(a), target)
		}
		fail := i%4 == 3
		var wg sync.WaitGroup
		var addErr, updErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				in := e.unit(fmt.Sprintf("d%02d-%d", i, j), m{})
				in.DependsOn = []coordinate.UnitRef{{Spec: "s", Key: target}}
				if err := e.ns.AddWorkUnits(e.ctx, "s", []coordinate.WorkUnitInput{in}); err != nil {
					addErr = err
				}
				runtime.Gosched()
			}
		}()
		go func() {
			defer wg.Done()
			st := coordinate.StatusFinished
			if fail {
				st = coordinate.StatusFailed
			}
			updErr = e.ns.UpdateAttempt(e.ctx, coordinate.AttemptRef{Spec: "s", Key: target, ID: a[0].ID},
				coordinate.WorkUnitUpdate{Status: st})
		}()
		wg.Wait()
		if addErr != nil || updErr != nil {
			e.t.Fatalf("round %d: add %v, update %v", i, addErr, updErr)
		}
		want := coordinate.StatusAvailable
		if fail {
			want = coordinate.StatusFailed
		}
		for j := 0; j < 3; j++ {
			key := fmt.Sprintf("d%02d-%d", i, j)
			if st := e.status("s", key); st != want {
				e.t.Errorf("round %d: %s depends on %s (completed) and is %v, want %v", i, key, target, st, want)
			}
		}
		// Take the released dependents out of the way of the next round.
		if !fail {
			for {
				as := e.work(coordinate.WorkRequest{Worker: text("w"), MaxJobs: 10, LeaseTime: 3600e9})
				if len(as) == 0 {
					break
				}
				for _, x := range as {
					e.finish("s", x.Key.Bytes, nil)
				}
			}
		}
	}
}

func testConcurrentGetWork(e *env) {
	const workers, units = 16, 400
	e.spec(m{"name": "s"})
	e.addKeys("s", keysN("k", units)...)
	var (
		mu   sync.Mutex
		got  = map[string]string{} // key -> worker
		dups []string
		errs []error
		wg   sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("w%02d", w)
			for {
				as, err := e.ns.GetWork(e.ctx, coordinate.WorkRequest{Worker: text(id), MaxJobs: 1 + w%4, LeaseTime: 3600e9})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if len(as) == 0 {
					return
				}
				mu.Lock()
				for _, a := range as {
					if prev, ok := got[a.Key.Bytes]; ok {
						dups = append(dups, fmt.Sprintf("%s to %s and %s", a.Key.Bytes, prev, id))
					}
					got[a.Key.Bytes] = id
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		e.t.Errorf("concurrent GetWork: %v", err)
	}
	for _, d := range dups {
		e.t.Errorf("unit handed out twice: %s", d)
	}
	if len(got) != units {
		e.t.Errorf("workers got %d distinct units, want all %d", len(got), units)
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusPending: units})
}

func testConcurrentAddAndFinish(e *env) {
	const adders, perAdder, finishers = 4, 100, 8
	e.spec(m{"name": "s"})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		finished = map[string]int{}
		addDone  = make(chan struct{})
	)
	report := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	var addWG sync.WaitGroup
	for a := 0; a < adders; a++ {
		addWG.Add(1)
		go func() {
			defer addWG.Done()
			for i := 0; i < perAdder; i += 10 {
				in := make([]coordinate.WorkUnitInput, 10)
				for j := range in {
					in[j] = coordinate.WorkUnitInput{Key: text(fmt.Sprintf("a%d-%03d", a, i+j)), Data: coordinate.EmptyMap}
				}
				if err := e.ns.AddWorkUnits(e.ctx, "s", in); err != nil {
					report(err)
					return
				}
			}
		}()
	}
	go func() { addWG.Wait(); close(addDone) }()
	for f := 0; f < finishers; f++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := text(fmt.Sprintf("f%d", f))
			for {
				// Read addDone before asking: no work after the adders are
				// done means everything has been handed out.
				var done bool
				select {
				case <-addDone:
					done = true
				default:
				}
				as, err := e.ns.GetWork(e.ctx, coordinate.WorkRequest{Worker: id, MaxJobs: 3, LeaseTime: 3600e9})
				if err != nil {
					report(err)
					return
				}
				if len(as) == 0 {
					if done {
						return
					}
					if _, err := e.ns.CountWorkUnits(e.ctx, "s"); err != nil {
						report(err)
						return
					}
					runtime.Gosched()
					continue
				}
				for _, a := range as {
					status := coordinate.StatusFinished
					if len(a.Key.Bytes)%2 == 0 && a.Key.Bytes[len(a.Key.Bytes)-1] == '7' {
						status = coordinate.StatusFailed
					}
					if err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: status}); err != nil {
						report(err)
						return
					}
					mu.Lock()
					finished[a.Key.Bytes]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		e.t.Errorf("concurrent add/finish: %v", err)
	}
	total := adders * perAdder
	if len(finished) != total {
		e.t.Errorf("finished %d distinct units, want %d", len(finished), total)
	}
	for k, n := range finished {
		if n != 1 {
			e.t.Errorf("unit %s completed %d times", k, n)
		}
	}
	c := e.counts("s")
	if c[coordinate.StatusFinished]+c[coordinate.StatusFailed] != total || len(c) > 2 {
		e.t.Errorf("counts = %v, want %d completed units and nothing else", c, total)
	}
}

// testConcurrentMixed runs every kind of call at once, for the race
// detector, and checks that every unit still gets done exactly once.
func testConcurrentMixed(e *env) {
	const units, workers = 300, 6
	e.spec(m{"name": "s", "max_getwork": 5})
	e.spec(m{"name": "t"})
	e.addKeys("s", keysN("s", units)...)
	e.heartbeat("parent", nil, time.Hour)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		done    = map[string]int{}
		stop    = make(chan struct{})
		readers sync.WaitGroup
	)
	report := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	defs := make([]coordinate.Data, 5) // encoded here: no t.Fatal off the test goroutine
	for i := range defs {
		defs[i] = enc(e.t, m{"name": "s", "max_getwork": 1 + i})
	}
	// Readers and control changes run until the workers are done.
	spin := func(step func(i int)) {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				step(i)
				runtime.Gosched()
			}
		}()
	}
	spin(func(_ int) {
		if _, err := e.ns.CountWorkUnits(e.ctx, "s"); err != nil {
			report(err)
		}
		if _, err := e.ns.ListWorkUnits(e.ctx, "s", coordinate.WorkUnitQuery{Statuses: []coordinate.Status{coordinate.StatusPending}, Limit: 10}); err != nil {
			report(err)
		}
		if _, _, err := e.ns.ListWorkSpecs(e.ctx, "", 0); err != nil {
			report(err)
		}
	})
	spin(func(i int) {
		if _, err := e.ns.ChildWorkUnits(e.ctx, "parent"); err != nil {
			report(err)
		}
		if _, err := e.ns.Workers(e.ctx); err != nil {
			report(err)
		}
		if _, err := e.ns.PrioritizeWorkUnits(e.ctx, "s", []string{fmt.Sprintf("s%03d", i%units)}, nil, 1); err != nil {
			report(err)
		}
	})
	spin(func(i int) {
		if _, err := e.ns.SetWorkSpec(e.ctx, defs[i%len(defs)]); err != nil {
			report(err)
		}
		if err := e.ns.ControlWorkSpec(e.ctx, "t", coordinate.WorkSpecControl{Weight: ptr(1 + i%7)}); err != nil {
			report(err)
		}
	})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("child%d", w)
			if err := e.ns.WorkerHeartbeat(e.ctx, coordinate.Heartbeat{Worker: text(id), Mode: coordinate.Null, Data: coordinate.EmptyMap, Parent: ptr(text("parent")), Expire: time.Hour}); err != nil {
				report(err)
				return
			}
			for {
				as, err := e.ns.GetWork(e.ctx, coordinate.WorkRequest{Worker: text(id), MaxJobs: 4, LeaseTime: time.Hour})
				if err != nil {
					report(err)
					return
				}
				if len(as) == 0 {
					return
				}
				for _, a := range as {
					if err := e.ns.UpdateAttempt(e.ctx, ref(a), coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
						report(err)
						return
					}
					mu.Lock()
					done[a.Key.Bytes]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for _, err := range errs {
		e.t.Errorf("concurrent call: %v", err)
	}
	if len(done) != units {
		e.t.Errorf("finished %d distinct units, want %d", len(done), units)
	}
	for k, n := range done {
		if n != 1 {
			e.t.Errorf("unit %s finished %d times", k, n)
		}
	}
	e.checkCounts("s", map[coordinate.Status]int{coordinate.StatusFinished: units})
	for _, c := range e.children("parent") {
		if len(c.Units) != 0 {
			e.t.Errorf("child %s still lists %d finished units", c.Worker.Bytes, len(c.Units))
		}
	}
}
