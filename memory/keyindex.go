package memory

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/google/btree"

	"github.com/coordinated/coordinated/coordinate"
)

// The key index: every unit of a spec in key order, so a listing that
// starts at key K costs O(log n + what it reads) instead of a scan of the
// spec (docs/architecture.md, "Listing units without stalling the
// namespace").
//
// It is a B-tree (github.com/google/btree) of the spec's *unit, ordered by
// unit.key, built lazily: a spec has none (spec.keys nil) until the first
// listing that needs it, so restoring a snapshot, adding, getting and
// finishing work cost nothing more in a daemon nobody lists by key. Once
// built it follows every unit linked to or unlinked from spec.units
// (spec.link, spec.unlink) and stays until the spec goes.
//
// Building it never holds the namespace lock for more than a chunk: the
// units are collected from the unit map a chunk per lock hold (Go map
// iteration survives changes between steps: an entry deleted before it is
// reached is not produced, one added may or may not be; see cow.go), sorted
// with the lock released (unit keys never change once a unit exists), and
// inserted a chunk per hold. The tree exists, and follows every link and
// unlink, from the start of the build, so a unit added meanwhile is in it
// whether or not the map walk produced it, and one deleted meanwhile is
// skipped at insertion (it is no longer its key's unit).

// keyIndexDegree is the B-tree's degree: nodes hold up to 2*degree-1
// units. 32 keeps a node's items in a few cache lines and the tree at 4-5
// levels for ten million units.
const keyIndexDegree = 32

// keyChunk is how many units a key-index build collects, or a walk reads,
// per namespace lock hold: about 0.15 ms. insertChunk is how many it
// inserts per hold, which costs more per unit (a map lookup and a tree
// descent): about 0.7 ms.
const (
	keyChunk    = 4096
	insertChunk = 1024
)

// keyIndex holds *unit rather than (key, *unit) pairs: a third of the
// memory, and adding units with random keys measured no faster with the
// pairs (a comparison then reads the key without the unit first).
type keyIndex = btree.BTreeG[*unit]

func newKeyIndex() *keyIndex {
	return btree.NewG(keyIndexDegree, func(a, b *unit) bool { return a.key < b.key })
}

// keyIndex returns sp's complete key index, building it first (or waiting
// for the build another call began). The caller holds ns.mu, which this
// may release and take again: it returns holding it, with an error if ctx
// ended or sp stopped being its name's spec meanwhile.
func (ns *namespace) keyIndex(ctx context.Context, sp *spec) (*keyIndex, error) {
	for {
		if sp.keys != nil && sp.keysBuilt == nil {
			return sp.keys, nil
		}
		if sp.keysBuilt == nil {
			if err := ns.buildKeyIndex(ctx, sp); err != nil {
				return nil, err
			}
			continue
		}
		built := sp.keysBuilt
		err := ns.yieldLock(ctx, sp, func() {
			select {
			case <-built:
			case <-ctx.Done():
			}
		})
		if err != nil {
			return nil, err
		}
	}
}

// buildKeyIndex builds sp's key index as the file comment says. The
// caller holds ns.mu; it is released between chunks. Once begun the build
// runs to the end even if ctx ends (it is bounded work that stalls no
// one, and a later listing would need it); it stops early only if sp is
// deleted meanwhile.
func (ns *namespace) buildKeyIndex(ctx context.Context, sp *spec) (err error) {
	done := make(chan struct{})
	sp.keys, sp.keysBuilt = newKeyIndex(), done
	defer func() {
		if ns.st.specs[sp.name.Bytes] == sp {
			if err != nil {
				sp.keys = nil // incomplete: the next listing builds it anew
			}
			sp.keysBuilt = nil
		}
		close(done)
	}()
	bg := context.WithoutCancel(ctx)
	// 80 MB at 10M units.
	all, err := collectUnits(bg, ns, sp, len(sp.units), keyChunk, func(u *unit) (*unit, bool) { return u, true }, keyOrder)
	if err != nil {
		return err
	}
	for i, u := range all {
		if sp.units[u.key] == u {
			sp.keys.ReplaceOrInsert(u)
		}
		if (i+1)%insertChunk == 0 {
			if err := ns.yieldLock(bg, sp, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// yieldLock lets other calls through in the middle of a long one: it
// releases ns.mu, runs the namespace's betweenChunks hook and during (if
// not nil) without it, takes it again (then runs the relocked hook) and
// applies what expired meanwhile, as begin does. The journal ticket of
// what this call committed before is kept for its end to wait on. It
// returns holding the lock, with ctx's error or ErrNoSuchWorkSpec if sp
// was deleted meanwhile.
func (ns *namespace) yieldLock(ctx context.Context, sp *spec, during func()) error {
	t := ns.ticket
	ns.ticket = 0
	ns.unlock() // work listeners hear of expiries applied so far
	if ns.betweenChunks != nil {
		ns.betweenChunks()
	}
	if during != nil {
		during()
	}
	runtime.Gosched()
	ns.mu.Lock()
	if ns.relocked != nil {
		ns.relocked()
	}
	ns.expire()
	ns.ticket = max(ns.ticket, t)
	if err := ctx.Err(); err != nil {
		return err
	}
	if ns.st.specs[sp.name.Bytes] != sp {
		return fmt.Errorf("%w %q (deleted while being listed)", coordinate.ErrNoSuchWorkSpec, sp.name.Bytes)
	}
	return nil
}

// collectUnits returns pick's value for each unit of sp it accepts,
// sorted by order. It walks sp's map per units per lock hold (yieldLock;
// a Go map iteration tolerates changes between steps) and makes the
// slice, for about size values, and sorts it with ns.mu released. The
// caller holds ns.mu; it returns holding it, with yieldLock's error. The
// key index build and the chunked deletes (unitdelete.go) collect so.
func collectUnits[T any](ctx context.Context, ns *namespace, sp *spec, size, per int, pick func(*unit) (T, bool), order func(a, b T) int) ([]T, error) {
	var out []T
	if err := ns.yieldLock(ctx, sp, func() { out = make([]T, 0, size+size/8) }); err != nil {
		return nil, err
	}
	n := 0
	for _, u := range sp.units {
		if v, ok := pick(u); ok {
			out = append(out, v)
		}
		if n++; n%per == 0 {
			if err := ns.yieldLock(ctx, sp, nil); err != nil {
				return nil, err
			}
		}
	}
	if err := ns.yieldLock(ctx, sp, func() { slices.SortFunc(out, order) }); err != nil {
		return nil, err
	}
	return out, nil
}

// keyOrder orders units by key, as the key index and every removal of
// many units (allUnits) do.
func keyOrder(a, b *unit) int { return strings.Compare(a.key, b.key) }

// walkKeys calls visit on sp's units with key >= start in key order, with
// ns.mu held (the caller holds it), until visit returns false or the units
// run out. Every keyChunk units it lets other calls through (yieldLock)
// and goes on from the least key after the last one visited, so the units
// it visits come in strictly increasing key order, each at most once;
// every unit that exists throughout the walk is visited, one added or
// deleted meanwhile may or may not be, and each is seen as it is when
// visited.
func (ns *namespace) walkKeys(ctx context.Context, sp *spec, start string, visit func(*unit) bool) error {
	keys, err := ns.keyIndex(ctx, sp)
	if err != nil {
		return err
	}
	from := &unit{key: start}
	for {
		n, stopped, last := 0, false, ""
		keys.AscendGreaterOrEqual(from, func(u *unit) bool {
			if n == keyChunk {
				return false
			}
			n++
			last = u.key
			stopped = !visit(u)
			return !stopped
		})
		if stopped || n < keyChunk {
			return nil
		}
		from = &unit{key: last + "\x00"} // the least key after it
		if err := ns.yieldLock(ctx, sp, nil); err != nil {
			return err
		}
		if keys = sp.keys; keys == nil {
			return fmt.Errorf("work spec %q: key index dropped during a listing", sp.name.Bytes)
		}
	}
}
