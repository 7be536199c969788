package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// TestStressDaemons runs three backends (three daemons) on one database
// with goroutines doing random mixes of every kind of call, then checks
// the invariants that must hold whatever the interleaving: no lease
// honoured after a later one on the same unit was handed out, a spec
// never over max_running, counts equal to a recount, no unit BLOCKED
// with every dependency finished, no finished unit handed out again, no
// unit lost. COORDINATE_STRESS_SECONDS sets how long the random mix runs
// (default 8).
func TestStressDaemons(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	dur := 8 * time.Second
	if s := os.Getenv("COORDINATE_STRESS_SECONDS"); s != "" {
		n, _ := strconv.Atoi(s)
		dur = time.Duration(n) * time.Second
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("COORDINATE_STRESS_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	url := freshSchema(t)
	ctx := t.Context()
	var nss [3]coordinate.Namespace
	for i := range nss {
		_, nss[i] = openBackend(t, url, Options{MaxConns: 6})
	}
	st := &stress{t: t, nss: nss[:], grants: map[string][]grant{}, finishedS: map[string]bool{},
		lockHolder: map[string]string{}}
	defSpec := func(m map[string]any) {
		raw, _ := cbor.Marshal(m)
		if _, err := nss[0].SetWorkSpec(ctx, raw); err != nil {
			t.Fatal(err)
		}
	}
	defSpec(map[string]any{"name": "a"})
	defSpec(map[string]any{"name": "b"})
	defSpec(map[string]any{"name": "m", "max_running": 2})

	// The stable units: s-keys, added once and never re-added, deleted or
	// updated without a lease. b's depend on a's and on lower b's.
	r0 := rand.New(rand.NewSource(seed))
	var ain, bin []coordinate.WorkUnitInput
	for i := range stableN {
		ain = append(ain, coordinate.WorkUnitInput{Key: textName(sKey(i)), Data: coordinate.EmptyMap})
		var deps []coordinate.UnitRef
		for range r0.Intn(3) {
			deps = append(deps, coordinate.UnitRef{Spec: "a", Key: sKey(r0.Intn(stableN))})
		}
		if i > 0 && r0.Intn(2) == 0 {
			deps = append(deps, coordinate.UnitRef{Spec: "b", Key: sKey(r0.Intn(i))})
		}
		bin = append(bin, coordinate.WorkUnitInput{Key: textName(sKey(i)), Data: coordinate.EmptyMap, DependsOn: deps})
	}
	if err := nss[1].AddWorkUnits(ctx, "a", ain); err != nil {
		t.Fatal(err)
	}
	if err := nss[2].AddWorkUnits(ctx, "b", bin); err != nil {
		t.Fatal(err)
	}
	var min []coordinate.WorkUnitInput
	for i := range 300 {
		min = append(min, coordinate.WorkUnitInput{Key: textName(sKey(i)), Data: coordinate.EmptyMap})
	}
	if err := nss[0].AddWorkUnits(ctx, "m", min); err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.mixer(runCtx, g, rand.New(rand.NewSource(seed+int64(g)+1)))
		}()
	}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.maxRunner(runCtx, g)
		}()
	}
	wg.Wait()
	st.report()
	if t.Failed() {
		return
	}
	t.Logf("ops %d, grants %d, lost-lease %d", st.ops, st.nGrants, st.lostLease)

	// Quiesced: counts and blocked units.
	st.checkState(ctx)
	// Then drain everything that can run and check the stable units all
	// ended.
	for _, n := range []string{"a", "b"} {
		if err := nss[0].ControlWorkSpec(ctx, n, coordinate.WorkSpecControl{Paused: ptrTo(false), MaxRunning: ptrTo(0), Weight: ptrTo(1)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		as, err := nss[i%3].GetWork(ctx, coordinate.WorkRequest{Worker: textName("drain"), MaxJobs: 50, LeaseTime: time.Hour, WorkSpecs: []string{"a", "b"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(as) == 0 {
			break
		}
		for _, a := range as {
			st.noteGrant(a, time.Now(), time.Now())
			if err := nss[(i+1)%3].UpdateAttempt(ctx, coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID}, statusUpdate(coordinate.StatusFinished)); err != nil {
				t.Fatalf("drain finish %s/%s: %v", a.Spec.Bytes, a.Key.Bytes, err)
			}
		}
	}
	st.report()
	st.checkState(ctx)
	for _, sp := range []string{"a", "b"} {
		var keys []string
		for i := range stableN {
			keys = append(keys, sKey(i))
		}
		us, err := nss[0].GetWorkUnits(ctx, sp, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, u := range us {
			if u == nil {
				t.Errorf("%s/%s lost", sp, keys[i])
				continue
			}
			// A unit retried while its dependency was FAILED waits for
			// it, BLOCKED (docs/dependencies.md); checkState found any
			// blocked on finished units only.
			if u.Status != coordinate.StatusFinished && u.Status != coordinate.StatusFailed && u.Status != coordinate.StatusBlocked {
				t.Errorf("%s/%s left %v after the drain (deps %v)", sp, keys[i], u.Status, u.DependsOn)
			}
		}
	}
}

const (
	stableN = 150
	rN      = 40
)

func sKey(i int) string   { return fmt.Sprintf("s%03d", i) }
func rKey(i int) string   { return fmt.Sprintf("r%02d", i) }
func ptrTo[T any](v T) *T { return &v }

type grant struct {
	id       int64
	started  time.Time // GetWork called
	returned time.Time // GetWork returned
}

type stress struct {
	t   *testing.T
	nss []coordinate.Namespace

	mu         sync.Mutex
	grants     map[string][]grant // spec/key -> leases handed out
	finishedS  map[string]bool    // stable units finished through their lease
	lockHolder map[string]string
	mHeld      int
	problems   []string
	ops        int
	nGrants    int
	lostLease  int
}

func (s *stress) bad(format string, args ...any) {
	s.mu.Lock()
	if len(s.problems) < 40 {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	}
	s.mu.Unlock()
}

func (s *stress) report() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.problems {
		s.t.Error(p)
	}
	s.problems = nil
}

func (s *stress) noteGrant(a coordinate.Attempt, started, returned time.Time) {
	u := a.Spec.Bytes + "/" + a.Key.Bytes
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nGrants++
	if s.finishedS[u] {
		s.problems = append(s.problems, fmt.Sprintf("finished stable unit %s handed out again (lease %d)", u, a.ID))
	}
	s.grants[u] = append(s.grants[u], grant{a.ID, started, returned})
}

// checkLease reports an UpdateAttempt on lease id of unit u, called at
// start, that succeeded although a later lease was handed out before it.
func (s *stress) checkLease(u string, id int64, start time.Time, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var mine *grant
	for i := range s.grants[u] {
		if s.grants[u][i].id == id {
			mine = &s.grants[u][i]
		}
	}
	if mine == nil {
		s.problems = append(s.problems, fmt.Sprintf("%s of %s lease %d: lease never handed out", what, u, id))
		return
	}
	for _, g := range s.grants[u] {
		if g.id != id && g.started.After(mine.returned) && g.returned.Before(start) {
			s.problems = append(s.problems, fmt.Sprintf("%s of %s under lease %d succeeded after lease %d was handed out", what, u, id, g.id))
		}
	}
}

type held struct {
	a  coordinate.Attempt
	ns int
}

func (s *stress) mixer(ctx context.Context, g int, r *rand.Rand) {
	worker := fmt.Sprintf("w%d", g)
	var mine []held
	pick := func() string { return []string{"a", "b"}[r.Intn(2)] }
	anyKey := func() string {
		if r.Intn(3) == 0 {
			return sKey(r.Intn(stableN))
		}
		return rKey(r.Intn(rN))
	}
	ok := func(what string, err error) bool {
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if errors.Is(err, coordinate.ErrLostLease) {
			s.mu.Lock()
			s.lostLease++
			s.mu.Unlock()
			return false
		}
		if errors.Is(err, coordinate.ErrCycle) || errors.Is(err, coordinate.ErrNoSuchWorkUnit) {
			return false
		}
		s.bad("%s %s: %v", worker, what, err)
		return false
	}
	for ctx.Err() == nil {
		s.mu.Lock()
		s.ops++
		s.mu.Unlock()
		ni := r.Intn(len(s.nss))
		ns := s.nss[ni]
		switch op := r.Intn(100); {
		case op < 22: // get_work
			lease := time.Hour
			if r.Intn(4) == 0 {
				lease = time.Duration(50+r.Intn(300)) * time.Millisecond
			}
			start := time.Now()
			as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: textName(worker), MaxJobs: 1 + r.Intn(5), LeaseTime: lease, WorkSpecs: []string{"a", "b"}})
			if !ok("get_work", err) {
				continue
			}
			ret := time.Now()
			for _, a := range as {
				s.noteGrant(a, start, ret)
				mine = append(mine, held{a, ni})
			}
		case op < 45 && len(mine) > 0: // update an attempt
			i := r.Intn(len(mine))
			h := mine[i]
			u := h.a.Spec.Bytes + "/" + h.a.Key.Bytes
			var upd coordinate.WorkUnitUpdate
			what := ""
			switch k := r.Intn(10); {
			case k < 5:
				upd, what = statusUpdate(coordinate.StatusFinished), "finish"
			case k < 7:
				upd, what = statusUpdate(coordinate.StatusFailed), "fail"
			case k < 8:
				upd, what = statusUpdate(coordinate.StatusAvailable), "give back"
			default:
				lt := time.Duration(r.Intn(2000)) * time.Millisecond
				upd, what = coordinate.WorkUnitUpdate{LeaseTime: &lt}, "renew"
			}
			if what != "renew" {
				mine = append(mine[:i], mine[i+1:]...)
			}
			start := time.Now()
			err := s.nss[r.Intn(len(s.nss))].UpdateAttempt(ctx, coordinate.AttemptRef{Spec: h.a.Spec.Bytes, Key: h.a.Key.Bytes, ID: h.a.ID}, upd)
			if err != nil && errors.Is(err, coordinate.ErrLostLease) && what == "renew" {
				mine = append(mine[:i], mine[i+1:]...)
			}
			if !ok(what, err) {
				continue
			}
			s.checkLease(u, h.a.ID, start, what)
			if what == "finish" && h.a.Key.Bytes[0] == 's' {
				s.mu.Lock()
				s.finishedS[u] = true
				s.mu.Unlock()
			}
		case op < 55: // add r-units, maybe with dependencies, groups, delays
			sp := pick()
			var in []coordinate.WorkUnitInput
			for range 1 + r.Intn(4) {
				u := coordinate.WorkUnitInput{Key: textName(rKey(r.Intn(rN))), Data: coordinate.EmptyMap}
				if r.Intn(2) == 0 {
					for range 1 + r.Intn(2) {
						u.DependsOn = append(u.DependsOn, coordinate.UnitRef{Spec: pick(), Key: anyKey()})
					}
				}
				if r.Intn(3) == 0 {
					u.Group = fmt.Sprintf("g%d", r.Intn(3))
				}
				if r.Intn(5) == 0 {
					u.Delay = time.Duration(r.Intn(200)) * time.Millisecond
				}
				if r.Intn(4) == 0 {
					u.Priority = ptrTo(float64(r.Intn(5)))
				}
				in = append(in, u)
			}
			ok("add", ns.AddWorkUnits(ctx, sp, in))
		case op < 62: // update_work_unit without a lease, r-units only
			st := []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed, coordinate.StatusAvailable, coordinate.StatusPending}[r.Intn(4)]
			upd := statusUpdate(st)
			if st == coordinate.StatusPending {
				lt := time.Duration(r.Intn(500)) * time.Millisecond
				upd.LeaseTime = &lt
				upd.Worker = ptrTo(textName(worker))
			}
			ok("update_work_unit", ns.UpdateWorkUnit(ctx, pick(), rKey(r.Intn(rN)), upd))
		case op < 68: // retry
			keys := []string{anyKey(), anyKey(), anyKey()}
			_, err := ns.RetryWorkUnits(ctx, pick(), keys)
			ok("retry", err)
		case op < 72: // prioritize
			keys := []string{anyKey(), anyKey()}
			var err error
			if r.Intn(2) == 0 {
				_, err = ns.PrioritizeWorkUnits(ctx, pick(), keys, ptrTo(float64(r.Intn(5))), 0)
			} else {
				_, err = ns.PrioritizeWorkUnits(ctx, pick(), keys, nil, float64(r.Intn(3)-1))
			}
			ok("prioritize", err)
		case op < 76: // delete r-units
			q := coordinate.DeleteQuery{Keys: []string{rKey(r.Intn(rN)), rKey(r.Intn(rN))}}
			if r.Intn(2) == 0 {
				q.Statuses = []coordinate.Status{coordinate.Status(1 + r.Intn(5))}
			}
			_, err := ns.DeleteWorkUnits(ctx, pick(), q)
			ok("delete", err)
		case op < 81: // control
			c := coordinate.WorkSpecControl{}
			switch r.Intn(4) {
			case 0:
				c.MaxRunning = ptrTo(r.Intn(4))
			case 1:
				c.Weight = ptrTo(r.Intn(5))
			case 2:
				c.Paused = ptrTo(r.Intn(4) == 0)
			case 3:
				def := map[string]any{"name": pick(), "max_getwork": r.Intn(3), "max_retries": r.Intn(3)}
				raw, _ := cbor.Marshal(def)
				_, err := ns.SetWorkSpec(ctx, raw)
				ok("set_work_spec", err)
				continue
			}
			ok("control", ns.ControlWorkSpec(ctx, pick(), c))
		case op < 86: // heartbeats
			data, _ := cbor.Marshal(map[string]any{coordinate.ReleaseLeasesKey: r.Intn(2) == 0})
			switch r.Intn(5) {
			case 0:
				err := ns.UnregisterWorker(ctx, worker)
				if errors.Is(err, coordinate.ErrNoSuchWorker) {
					err = nil
				}
				ok("unregister", err)
			default:
				ok("heartbeat", ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: textName(worker), Data: data,
					Mode: coordinate.Null, Expire: time.Duration(100+r.Intn(900)) * time.Millisecond}))
			}
		case op < 94: // locks
			p := fmt.Sprintf("L%d", r.Intn(4))
			path := coordinate.NewLockPath(p)
			owner := textName(worker)
			s.mu.Lock()
			h := s.lockHolder[p]
			s.mu.Unlock()
			if h == worker {
				s.mu.Lock()
				delete(s.lockHolder, p)
				s.mu.Unlock()
				refused, holder, err := ns.UnlockPaths(ctx, owner, []coordinate.LockPath{path})
				if ok("unlock", err) && refused != -1 {
					s.bad("%s unlock %s refused, holder %v", worker, p, holder)
				}
				continue
			}
			locked, _, err := ns.LockPaths(ctx, owner, time.Hour, []coordinate.LockPath{path}, true)
			if ok("lock", err) && locked[0] {
				s.mu.Lock()
				if o := s.lockHolder[p]; o != "" {
					s.problems = append(s.problems, fmt.Sprintf("%s locked %s held by %s", worker, p, o))
				}
				s.lockHolder[p] = worker
				s.mu.Unlock()
			}
		case op < 97: // cancel a group
			_, err := ns.CancelGroup(ctx, fmt.Sprintf("g%d", r.Intn(3)))
			ok("cancel_group", err)
		default: // count on some daemon, sanity only
			_, err := ns.CountWorkUnits(ctx, pick())
			ok("count", err)
		}
	}
	// Give back the leases this worker holds.
	for _, h := range mine {
		err := s.nss[0].UpdateAttempt(context.Background(), coordinate.AttemptRef{Spec: h.a.Spec.Bytes, Key: h.a.Key.Bytes, ID: h.a.ID}, statusUpdate(coordinate.StatusAvailable))
		if err != nil && !errors.Is(err, coordinate.ErrLostLease) {
			s.bad("final give back: %v", err)
		}
	}
	// Release the locks this worker holds.
	s.mu.Lock()
	for p, h := range s.lockHolder {
		if h == worker {
			delete(s.lockHolder, p)
			s.mu.Unlock()
			if _, _, err := s.nss[0].UnlockPaths(context.Background(), textName(worker), []coordinate.LockPath{coordinate.NewLockPath(p)}); err != nil {
				s.bad("final unlock: %v", err)
			}
			s.mu.Lock()
		}
	}
	s.mu.Unlock()
}

// maxRunner leases units of "m" (max_running 2) one at a time and
// finishes them, counting how many are held: the count only undercounts
// (raised after the grant returns, lowered before the finish is sent), so
// any count over 2 is a violation.
func (s *stress) maxRunner(ctx context.Context, g int) {
	worker := textName(fmt.Sprintf("m%d", g))
	for i := 0; ctx.Err() == nil; i++ {
		ns := s.nss[(g+i)%len(s.nss)]
		as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: worker, MaxJobs: 1 + i%3, LeaseTime: time.Hour, WorkSpecs: []string{"m"}})
		if err != nil {
			if ctx.Err() == nil {
				s.bad("m get_work: %v", err)
			}
			return
		}
		if len(as) == 0 {
			// re-add some finished ones
			var in []coordinate.WorkUnitInput
			for j := range 20 {
				in = append(in, coordinate.WorkUnitInput{Key: textName(fmt.Sprintf("x%d-%d-%d", g, i, j)), Data: coordinate.EmptyMap})
			}
			if err := ns.AddWorkUnits(ctx, "m", in); err != nil && ctx.Err() == nil {
				s.bad("m add: %v", err)
			}
			continue
		}
		s.mu.Lock()
		s.mHeld += len(as)
		if s.mHeld > 2 {
			s.problems = append(s.problems, fmt.Sprintf("spec m: %d units held at once, max_running 2", s.mHeld))
		}
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		for _, a := range as {
			s.mu.Lock()
			s.mHeld--
			s.mu.Unlock()
			if err := s.nss[(g+i+1)%len(s.nss)].UpdateAttempt(ctx, coordinate.AttemptRef{Spec: "m", Key: a.Key.Bytes, ID: a.ID}, statusUpdate(coordinate.StatusFinished)); err != nil && ctx.Err() == nil {
				s.bad("m finish: %v", err)
			}
		}
	}
}

// checkState compares each spec's counts with a recount of its units on
// every daemon, and looks for units blocked with no unfinished dependency.
func (s *stress) checkState(ctx context.Context) {
	t := s.t
	status := map[string]coordinate.Status{}
	units := map[string][]*coordinate.WorkUnit{}
	for _, sp := range []string{"a", "b", "m"} {
		us, err := s.nss[0].ListWorkUnits(ctx, sp, coordinate.WorkUnitQuery{})
		if err != nil {
			t.Fatal(err)
		}
		units[sp] = us
		recount := map[coordinate.Status]int{}
		for _, u := range us {
			recount[u.Status]++
			status[sp+"/"+u.Key.Bytes] = u.Status
		}
		for i, ns := range s.nss {
			c, err := ns.CountWorkUnits(ctx, sp)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(c) != fmt.Sprint(recount) {
				t.Errorf("daemon %d: count_work_units(%s) = %v, recount %v", i, sp, c, recount)
			}
		}
	}
	for _, sp := range []string{"a", "b"} {
		for _, u := range units[sp] {
			if u.Status != coordinate.StatusBlocked {
				continue
			}
			waiting := false
			var deps []string
			for _, d := range u.DependsOn {
				st, ok := status[d.Spec+"/"+d.Key]
				deps = append(deps, fmt.Sprintf("%s/%s=%v", d.Spec, d.Key, st))
				if !ok || st != coordinate.StatusFinished {
					waiting = true
				}
			}
			sort.Strings(deps)
			if !waiting {
				t.Errorf("%s/%s BLOCKED with no unfinished dependency: %v", sp, u.Key.Bytes, deps)
			}
		}
	}
}
