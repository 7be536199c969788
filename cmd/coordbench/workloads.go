package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync/atomic"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/cborx"
)

// bench holds the settings shared by every workload.
type bench struct {
	addr    string
	conns   int
	units   int
	depths  []int
	sample  int
	perCall int           // drainN: units per get_work
	settle  time.Duration // drainN: pause between preloading and draining
	think   time.Duration // drains: a unit is finished after a random wait below this
	seed    int64
	timeout time.Duration
	log     *slog.Logger
}

const (
	specPrefix = "coordbench_"
	addBatch   = 1000 // units per add_work_units call, like a chunked `coordinate load`
	// idleLimit is how long a drain waits for work to appear (e.g. chained
	// units another connection is about to create) before giving up.
	idleLimit = 5 * time.Second
)

// spec is a work spec definition to create.
type spec struct {
	name   string
	weight int    // 0: not sent
	then   string // "": not sent
}

func (s spec) definition() opts {
	d := opts{"name": []byte(s.name), "min_gb": 0.1}
	if s.weight != 0 {
		d["weight"] = s.weight
	}
	if s.then != "" {
		d["then"] = []byte(s.then)
	}
	return d
}

// runWorkload runs one named workload and returns its reports.
func (b *bench) runWorkload(ctx context.Context, name string) ([]result, error) {
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	switch name {
	case "add":
		s := spec{name: specPrefix + "add"}
		return b.withSpecs(ctx, []spec{s}, func() ([]result, error) {
			batches := b.encodeUnits(b.units) // not timed: a loader has its data ready
			watch := startStopwatch()
			lat, err := b.sendUnits(ctx, s.name, batches)
			return []result{watch.result("add", b.units, lat)}, err
		})
	case "drain1", "drain100":
		maxJobs := 1
		if name == "drain100" {
			maxJobs = 100
		}
		s := spec{name: specPrefix + name}
		return b.withSpecs(ctx, []spec{s}, func() ([]result, error) {
			if _, err := b.addUnits(ctx, s.name, b.units); err != nil {
				return nil, fmt.Errorf("preloading: %w", err)
			}
			r, err := b.drain(ctx, name, nil, b.units, maxJobs, nil)
			if err == nil {
				err = b.expectFinished(ctx, []spec{s}, b.units)
			}
			return []result{r}, err
		})
	case "chain":
		a := spec{name: specPrefix + "chain_a", then: specPrefix + "chain_b"}
		s2 := spec{name: specPrefix + "chain_b"}
		return b.withSpecs(ctx, []spec{a, s2}, func() ([]result, error) {
			if _, err := b.addUnits(ctx, a.name, b.units); err != nil {
				return nil, fmt.Errorf("preloading: %w", err)
			}
			// Finishing an `a` unit names one `b` unit in its output.
			chainOut := func(u workUnit) any {
				if string(u.spec) != a.name {
					return nil
				}
				return opts{"output": []any{append([]byte("b/"), u.key...)}}
			}
			names := []any{[]byte(a.name), []byte(s2.name)}
			r, err := b.drain(ctx, "chain", names, 2*b.units, 1, chainOut)
			if err == nil {
				err = b.expectFinished(ctx, []spec{a, s2}, 2*b.units)
			}
			return []result{r}, err
		})
	case "weighted":
		specs := make([]spec, 100)
		for i := range specs {
			specs[i] = spec{name: fmt.Sprintf("%sweighted_%03d", specPrefix, i), weight: i + 1}
		}
		return b.withSpecs(ctx, specs, func() ([]result, error) {
			for i, s := range specs {
				n := b.units / len(specs)
				if i < b.units%len(specs) {
					n++
				}
				if n == 0 {
					continue
				}
				if _, err := b.addUnits(ctx, s.name, n); err != nil {
					return nil, fmt.Errorf("preloading %s: %w", s.name, err)
				}
			}
			r, err := b.drain(ctx, "weighted", nil, b.units, 1, nil)
			if err == nil {
				err = b.expectFinished(ctx, specs, b.units)
			}
			return []result{r}, err
		})
	case "drainN":
		var results []result
		for _, depth := range b.depths {
			s := spec{name: specPrefix + "drainN"}
			rs, err := b.withSpecs(ctx, []spec{s}, func() ([]result, error) {
				// The preload is reported too (units/s of add_work_units
				// batches), timed from the first send, encoding excluded.
				batches := b.encodeUnits(depth)
				sw := startStopwatch()
				lat, err := b.sendUnits(ctx, s.name, batches)
				if err != nil {
					return nil, fmt.Errorf("preloading %d units: %w", depth, err)
				}
				preload := sw.result(fmt.Sprintf("preload@%d", depth), depth, lat)
				if b.settle > 0 {
					select {
					case <-time.After(b.settle):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				label := fmt.Sprintf("drain@%d", depth)
				if b.perCall > 1 {
					label = fmt.Sprintf("drain%d@%d", b.perCall, depth)
				}
				r, err := b.drain(ctx, label, nil, min(b.sample, depth), b.perCall, nil)
				return []result{preload, r}, err
			})
			results = append(results, rs...)
			if err != nil {
				return results, err
			}
		}
		return results, nil
	}
	return nil, fmt.Errorf("unknown workload %q", name)
}

// withSpecs creates the specs (replacing leftovers of an earlier run), runs
// fn, and deletes the specs again even when fn fails.
func (b *bench) withSpecs(ctx context.Context, specs []spec, fn func() ([]result, error)) ([]result, error) {
	deleteAll := func(ctx context.Context) error {
		_, err := b.withConns(ctx, 1, func(ctx context.Context, c *conn) error {
			for _, s := range specs {
				if _, err := c.call("del_work_spec", []byte(s.name)); err != nil {
					return err
				}
			}
			return nil
		})
		return err
	}
	if err := deleteAll(ctx); err != nil {
		return nil, fmt.Errorf("removing old specs: %w", err)
	}
	_, err := b.withConns(ctx, 1, func(ctx context.Context, c *conn) error {
		for _, s := range specs {
			if err := c.callOK("set_work_spec", s.definition()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating specs: %w", err)
	}
	results, err := fn()
	// Clean up with a fresh deadline: the workload's may have expired.
	cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if cerr := deleteAll(cleanCtx); cerr != nil && err == nil {
		err = fmt.Errorf("deleting specs: %w", cerr)
	}
	return results, err
}

// addUnits adds n units to a spec (see encodeUnits and sendUnits).
func (b *bench) addUnits(ctx context.Context, specName string, n int) (latencies, error) {
	return b.sendUnits(ctx, specName, b.encodeUnits(n))
}

// encodeUnits encodes n units as add_work_units item lists of addBatch
// units each. Keys are "u%08d" in a seeded random order; data is a small
// map {"i": i, "pad": bytes} with a seeded payload size. Everything is
// encoded ahead of sending so the load generator's own CPU cost, which
// counts against the daemon's on a shared machine, stays small.
func (b *bench) encodeUnits(n int) []cbor.RawMessage {
	order := rand.New(rand.NewPCG(uint64(b.seed), uint64(n))).Perm(n)
	var pad [48]byte
	batches := make([]cbor.RawMessage, 0, (n+addBatch-1)/addBatch)
	for start := 0; start < n; start += addBatch {
		ids := order[start:min(n, start+addBatch)]
		buf := cborx.AppendHead(make([]byte, 0, len(ids)*80), cborx.MajorArray, uint64(len(ids)))
		for _, i := range ids {
			size := mix(uint64(b.seed), uint64(i)) % 49
			buf = appendUnit(buf, i, pad[:size])
		}
		batches = append(batches, buf)
	}
	return batches
}

// sendUnits adds encoded batches to a spec, batches spread over the
// connections.
func (b *bench) sendUnits(ctx context.Context, specName string, batches []cbor.RawMessage) (latencies, error) {
	var next atomic.Int64
	name := mustEncode([]byte(specName))
	return b.withConns(ctx, min(b.conns, len(batches)), func(ctx context.Context, c *conn) error {
		for {
			bi := int(next.Add(1)) - 1
			if bi >= len(batches) || ctx.Err() != nil {
				return ctx.Err()
			}
			if err := c.callOK("add_work_units", name, batches[bi]); err != nil {
				return err
			}
		}
	})
}

// mix is a splitmix64 step: a cheap, seeded, per-unit pseudo-random value.
func mix(seed, i uint64) uint64 {
	z := seed + i*0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// drain runs get_work/update_work_unit loops on every connection, like
// legacy workers, until exactly target units are finished. finishData, if
// set, gives the data to send with a unit's finish (nil: none).
func (b *bench) drain(ctx context.Context, workload string, specNames []any, target, maxJobs int,
	finishData func(workUnit) any) (result, error) {
	var finished atomic.Int64
	claims := &quota{limit: int64(target)}
	pid := os.Getpid()
	watch := startStopwatch()
	finishOpts := mustEncode(opts{"status": 4})
	lat, err := b.withConns(ctx, b.conns, func(ctx context.Context, c *conn) error {
		worker := mustEncode([]byte(fmt.Sprintf("coordbench-%d-%d", pid, c.id)))
		thinks := rand.New(rand.NewPCG(uint64(b.seed), uint64(c.id)))
		workOpts := &workOptions{specs: specNames}
		var idleSince time.Time
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Ask only for what is left, so exactly target units are
			// leased and finished.
			want := claims.take(int64(maxJobs))
			if want == 0 {
				return nil
			}
			units, err := c.getWork(worker, int(want), workOpts)
			if err != nil {
				return err
			}
			if int64(len(units)) > want {
				return fmt.Errorf("get_work with max_jobs %d returned %d units", want, len(units))
			}
			claims.give(want - int64(len(units)))
			if len(units) == 0 {
				if idleSince.IsZero() {
					idleSince = time.Now()
				} else if time.Since(idleSince) > idleLimit {
					return fmt.Errorf("no work for %v with %d of %d units finished", idleLimit, finished.Load(), target)
				}
				time.Sleep(time.Millisecond)
				continue
			}
			idleSince = time.Time{}
			for _, u := range units {
				if b.think > 0 {
					time.Sleep(time.Duration(thinks.Int64N(int64(b.think))))
				}
				o := finishOpts
				if finishData != nil {
					if d := finishData(u); d != nil {
						o = mustEncode(opts{"status": 4, "data": d})
					}
				}
				if err := c.callOK("update_work_unit", u.specRaw, u.keyRaw, o); err != nil {
					return fmt.Errorf("finishing %s/%s: %w", u.spec, u.key, err)
				}
				finished.Add(1)
			}
		}
	})
	return watch.result(workload, int(finished.Load()), lat), err
}

// quota hands out at most limit claims in total across goroutines.
type quota struct {
	limit int64
	used  atomic.Int64
}

// take claims up to n and returns how many it got (0 when none are left).
func (q *quota) take(n int64) int64 {
	for {
		cur := q.used.Load()
		k := min(n, q.limit-cur)
		if k <= 0 {
			return 0
		}
		if q.used.CompareAndSwap(cur, cur+k) {
			return k
		}
	}
}

// give returns n unused claims.
func (q *quota) give(n int64) { q.used.Add(-n) }

// expectFinished checks with count_work_units that the specs hold want
// FINISHED units in total: the drain really completed the work.
func (b *bench) expectFinished(ctx context.Context, specs []spec, want int) error {
	_, err := b.withConns(ctx, 1, func(ctx context.Context, c *conn) error {
		total := 0
		for _, s := range specs {
			res, err := c.call("count_work_units", []byte(s.name))
			if err != nil {
				return err
			}
			pair, ok := res.(cborrpc.Tuple)
			if !ok || len(pair) != 2 {
				return fmt.Errorf("count_work_units: unexpected result %s", show(res))
			}
			counts, ok := pair[0].(map[any]any)
			if !ok {
				return fmt.Errorf("count_work_units: unexpected counts %s", show(pair[0]))
			}
			for status, n := range counts {
				st, _ := status.(uint64)
				cnt, _ := n.(uint64)
				if st == 4 {
					total += int(cnt)
				} else if cnt > 0 {
					return fmt.Errorf("%s still has %d units in status %v", s.name, cnt, status)
				}
			}
		}
		if total != want {
			return fmt.Errorf("%d units FINISHED, want %d", total, want)
		}
		return nil
	})
	return err
}
