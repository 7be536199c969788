package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// opTypes lists every op type by name, for the serialisation round trip.
var opTypes = map[string]func() op{
	"SetWorkSpec":         func() op { return &opSetWorkSpec{} },
	"ControlWorkSpec":     func() op { return &opControlWorkSpec{} },
	"DeleteWorkSpec":      func() op { return &opDeleteWorkSpec{} },
	"Clear":               func() op { return &opClear{} },
	"AddWorkUnits":        func() op { return &opAddWorkUnits{} },
	"PrioritizeWorkUnits": func() op { return &opPrioritizeWorkUnits{} },
	"DeleteWorkUnits":     func() op { return &opDeleteWorkUnits{} },
	"UpdateWorkUnit":      func() op { return &opUpdateWorkUnit{} },
	"Expire":              func() op { return &opExpire{} },
	"GetWork":             func() op { return &opGetWork{} },
	"Archive":             func() op { return &opArchive{} },
	"Heartbeat":           func() op { return &opHeartbeat{} },
	"UnregisterWorker":    func() op { return &opUnregisterWorker{} },
	"CancelGroup":         func() op { return &opCancelGroup{} },
	"ImportWorkSpec":      func() op { return &opImportWorkSpec{} },
	"DropUnits":           func() op { return &opDropUnits{} },
}

func opTypeName(o op) string { return reflect.TypeOf(o).Elem().Name()[2:] }

type journalEntry struct {
	Type string
	Op   cbor.RawMessage
}

// TestReplayRebuildsState drives a namespace through a random workload
// touching every op, journals the ops through CBOR, replays them on an
// empty state and requires the identical state.
func TestReplayRebuildsState(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			var journal []journalEntry
			clock := coordinate.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			ns := newNamespace("", Options{Clock: clock, StallTimeout: time.Minute})
			ns.journal = func(o op) {
				name := opTypeName(o)
				if _, ok := opTypes[name]; !ok {
					t.Fatalf("op type %s missing from opTypes", name)
				}
				b, err := cbor.Marshal(o)
				if err != nil {
					t.Fatalf("encode %s: %v", name, err)
				}
				journal = append(journal, journalEntry{name, b})
			}
			randomWorkload(t, ns, clock, rand.New(rand.NewPCG(seed, 7)), 3000)
			checkInvariants(t, ns.st)
			seen := map[string]int{}
			for _, e := range journal {
				seen[e.Type]++
			}
			for name := range opTypes {
				if seen[name] == 0 {
					t.Errorf("workload never committed a %s op", name)
				}
			}
			t.Logf("ops: %v; state: %d specs, %d dependents, %d groups, %d workers", seen, len(ns.st.specs), len(ns.st.dependents), len(ns.st.groups), len(ns.st.workers.byID))

			replayed := newState()
			for i, e := range journal {
				o := opTypes[e.Type]()
				if err := cbor.Unmarshal(e.Op, o); err != nil {
					t.Fatalf("decode op %d %s: %v", i, e.Type, err)
				}
				o.apply(replayed)
			}
			checkInvariants(t, replayed)
			if got, want := dump(replayed), dump(ns.st); got != want {
				t.Fatalf("replayed state differs from the live one:\n--- replayed\n%s\n--- live\n%s", got, want)
			}
			if len(ns.st.specs) == 0 {
				t.Fatal("workload left no specs: the comparison proves little")
			}
		})
	}
}

// randomWorkload runs n random calls covering every mutating method,
// checking invariants as it goes.
func randomWorkload(t *testing.T, ns *namespace, clock *coordinate.FakeClock, r *rand.Rand, n int) {
	t.Helper()
	// Deletes by status and archives of more than 20 units go in chunks
	// (unitdelete.go), so every test driving this workload meets them.
	ns.deleteChunk = 20
	ctx := context.Background()
	enc := func(v any) coordinate.Data {
		b, err := cbor.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	specs := []string{"a", "b", "c", "d"}
	defs := map[string]coordinate.Data{
		"a": enc(map[string]any{"name": "a", "then": "b", "max_running": 5}),
		"b": enc(map[string]any{"name": "b", "max_retries": 2, "weight": 3}),
		"c": enc(map[string]any{"name": "c", "continuous": true, "interval": 7}),
		"d": enc(map[string]any{"name": "d", "priority": 1, "max_getwork": 2}),
	}
	key := func() string { return fmt.Sprintf("k%02d", r.IntN(40)) }
	pick := func() string { return specs[r.IntN(len(specs))] }
	workers := []string{"w1", "w2", "w3", "kid1", "kid2"}
	var held []coordinate.Attempt
	for _, s := range specs {
		if _, err := ns.SetWorkSpec(ctx, defs[s]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		var err error
		switch x := r.IntN(100); {
		case x < 25:
			var units []coordinate.WorkUnitInput
			for range 1 + r.IntN(4) {
				in := coordinate.WorkUnitInput{
					Key:  coordinate.Name{Bytes: key(), Text: r.IntN(2) == 0},
					Data: enc(map[string]any{"i": i, "output": []any{key()}}),
				}
				if r.IntN(3) == 0 {
					p := float64(r.IntN(5))
					in.Priority = &p
				}
				if r.IntN(5) == 0 {
					in.Delay = time.Duration(r.IntN(20)) * time.Second
				}
				if r.IntN(4) == 0 {
					in.DependsOn = []coordinate.UnitRef{{Spec: pick(), Key: key()}}
				}
				if r.IntN(4) == 0 {
					in.Group = fmt.Sprint("g", r.IntN(3))
				}
				units = append(units, in)
			}
			err = ns.AddWorkUnits(ctx, pick(), units)
		case x < 45:
			var as []coordinate.Attempt
			as, err = ns.GetWork(ctx, coordinate.WorkRequest{
				Worker:    coordinate.Name{Bytes: workers[r.IntN(len(workers))], Text: true},
				LeaseTime: time.Duration(5+r.IntN(30)) * time.Second,
				MaxJobs:   1 + r.IntN(3),
			})
			held = append(held, as...)
		case x < 65 && len(held) > 0:
			j := r.IntN(len(held))
			a := held[j]
			held = append(held[:j], held[j+1:]...)
			upd := coordinate.WorkUnitUpdate{Status: []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed, coordinate.StatusAvailable, 0}[r.IntN(4)]}
			if upd.Status == 0 || r.IntN(3) == 0 {
				lt := time.Duration(r.IntN(40)-5) * time.Second
				upd.LeaseTime = &lt
			}
			if r.IntN(2) == 0 {
				upd.Data = enc(map[string]any{"done": i, "output": map[string]any{key(): map[string]any{}}})
			}
			ref := coordinate.AttemptRef{Spec: a.Spec.Bytes, Key: a.Key.Bytes, ID: a.ID}
			if r.IntN(2) == 0 {
				err = ns.UpdateAttempt(ctx, ref, upd)
			} else {
				err = ns.UpdateWorkUnit(ctx, ref.Spec, ref.Key, upd)
			}
		case x < 72:
			clock.Add(time.Duration(r.IntN(15)) * time.Second)
		case x < 77:
			w := workers[r.IntN(len(workers))]
			hb := coordinate.Heartbeat{Worker: coordinate.Name{Bytes: w, Text: true}, Mode: enc("RUN"), Data: enc(map[string]any{"pid": i}), Expire: time.Duration(10+r.IntN(60)) * time.Second}
			if w[0] == 'k' {
				hb.Parent = &coordinate.Name{Bytes: "w1", Text: true}
			}
			err = ns.WorkerHeartbeat(ctx, hb)
		case x < 79:
			err = ns.UnregisterWorker(ctx, workers[r.IntN(len(workers))])
		case x < 82:
			p := float64(r.IntN(9))
			_, err = ns.PrioritizeWorkUnits(ctx, pick(), []string{key(), key()}, &p, 0)
		case x < 84:
			_, err = ns.PrioritizeWorkUnits(ctx, pick(), []string{key()}, nil, float64(r.IntN(5)-2))
		case x < 87:
			q := coordinate.DeleteQuery{Keys: []string{key()}}
			if r.IntN(3) == 0 {
				q = coordinate.DeleteQuery{Statuses: []coordinate.Status{coordinate.Status(1 + r.IntN(5))}}
			}
			_, err = ns.DeleteWorkUnits(ctx, pick(), q)
		case x < 89:
			err = ns.Archive(ctx, nil, coordinate.RetentionPolicy{MaxCount: r.IntN(5), MaxAge: time.Duration(r.IntN(60)) * time.Second})
		case x < 91:
			_, err = ns.CancelGroup(ctx, fmt.Sprint("g", r.IntN(3)))
		case x < 94:
			p := r.IntN(2) == 0
			w := 1 + r.IntN(20)
			err = ns.ControlWorkSpec(ctx, pick(), coordinate.WorkSpecControl{Paused: &p, Weight: &w})
		case x < 96:
			s := pick()
			_, err = ns.SetWorkSpec(ctx, defs[s])
		case x < 97:
			s := pick()
			if err = ns.DeleteWorkSpec(ctx, s); err == nil && r.IntN(2) == 0 {
				_, err = ns.SetWorkSpec(ctx, defs[s])
			} else if err == nil {
				// Back as another daemon saved it.
				in := &coordinate.ImportedWorkSpec{Definition: defs[s], NextContinuous: clock.Now(),
					Archived: map[coordinate.Status]int{coordinate.StatusFinished: r.IntN(3)}}
				seen := map[string]bool{}
				for range r.IntN(6) {
					k := key()
					if seen[k] {
						continue
					}
					seen[k] = true
					u := coordinate.ImportedWorkUnit{Key: coordinate.Name{Bytes: k, Text: true}, Data: enc(map[string]any{"i": i}),
						Status: []coordinate.Status{1, 3, 4, 5}[r.IntN(4)], Priority: float64(r.IntN(3))}
					if u.Status != coordinate.StatusAvailable {
						u.Expiration = clock.Now().Add(time.Duration(r.IntN(40)-10) * time.Second)
						u.Worker = &coordinate.Name{Bytes: workers[r.IntN(len(workers))], Text: true}
					}
					in.Units = append(in.Units, u)
				}
				err = ns.ImportWorkSpec(ctx, in)
			}
		case x < 98 && r.IntN(4) == 0:
			if _, err = ns.Clear(ctx); err == nil {
				for _, s := range specs {
					if _, err = ns.SetWorkSpec(ctx, defs[s]); err != nil {
						break
					}
				}
			}
		default:
			_, err = ns.CountWorkUnits(ctx, pick())
		}
		if err != nil && !isExpected(err) {
			t.Fatalf("step %d: %v", i, err)
		}
		if i%100 == 0 {
			checkInvariants(t, ns.st)
		}
	}
}

// isExpected: errors the random workload provokes on purpose.
func isExpected(err error) bool {
	for _, e := range []error{coordinate.ErrLostLease, coordinate.ErrNoSuchWorker, coordinate.ErrCycle, coordinate.ErrNoSuchWorkUnit} {
		if errorsIs(err, e) {
			return true
		}
	}
	return false
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
