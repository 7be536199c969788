package memory

import (
	"context"
	"errors"
	"slices"

	"github.com/coordinated/coordinated/coordinate"
)

// Deleting and archiving many units without holding the namespace lock
// for all of them (docs/architecture.md, "Deleting and archiving in
// chunks"): DeleteWorkUnits by status or all, Archive, and DeleteWorkSpec
// of a spec whose units are entangled (dropspec.go).
//
// On a spec of more than deleteChunk units such a call
//
//  1. collects its victims from the spec's map, 4*deleteChunk units per lock
//     hold (a Go map iteration tolerates changes between steps, as the key
//     index build and the snapshot walk rely on);
//  2. sorts them with the lock released, in the order the one-shot op
//     removes them: by key, or for archive by completion time, newest
//     first, then key (the time is copied while collecting: it changes,
//     a unit's key never does);
//  3. removes them deleteChunk per lock hold, each chunk one journaled
//     opDropUnits of explicit keys, re-checked in that hold: the same unit
//     (not one deleted and added again), and for a delete by status still
//     of a status asked for, for archive still completed with the same
//     completion time.
//
// When nothing else runs meanwhile the outcome is the one-shot op's
// (TestChunkedDeleteMatchesOneShot): the same units go in the same order,
// so dependents fail and groups count as they did. A BLOCKED victim failed
// by the removal of an earlier one (its dependency) is still removed, as
// the one-shot op, which chose its victims first, removed it. Otherwise
// the call is not one point in time: every unit that kept a status asked
// for throughout is removed; a unit that changed meanwhile, or was added,
// may or may not be; nothing else is. The count is what the call removed.
// Once begun, the call runs to its end even if its context ends; it stops
// early, without error, if the spec is deleted meanwhile.
//
// A smaller spec still gets the one-shot op, a single record as before.

// deleteChunk is how many units one lock hold removes (about a
// millisecond of work; collecting looks at 4 times as many per hold) and
// the spec size from which the calls work in chunks
// (namespace.deleteChunk, which tests lower).
const deleteChunk = 1024

// victim is a unit to remove and, for archive, its completion time when
// collected.
type victim struct {
	u   *unit
	exp int64
}

// collectVictims returns the units of sp that pass keep, about size of
// them, sorted by order (collectUnits), visiting 4*deleteChunk units per
// lock hold; 16 MB at 1M victims. The caller holds ns.mu.
func (ns *namespace) collectVictims(ctx context.Context, sp *spec, size int, keep func(*unit) bool, order func(a, b victim) int) ([]victim, error) {
	return collectUnits(ctx, ns, sp, size, 4*ns.deleteChunk, func(u *unit) (victim, bool) {
		return victim{u, u.expiration}, keep(u)
	}, order)
}

// dropVictims removes the victims still in sp that pass still, in order,
// deleteChunk per lock hold, each chunk one journaled opDropUnits (the
// first also forgets the archived counts of forget). It returns how many
// it removed, and ErrNoSuchWorkSpec if sp was deleted meanwhile. The
// caller holds ns.mu.
func (ns *namespace) dropVictims(ctx context.Context, sp *spec, vs []victim, still func(victim) bool, archive bool, forget []coordinate.Status) (int, error) {
	deleted := 0
	for first := true; first || len(vs) > 0; first = false {
		if !first {
			if err := ns.yieldLock(ctx, sp, nil); err != nil {
				return deleted, err
			}
		}
		chunk := vs[:min(len(vs), ns.deleteChunk)]
		vs = vs[len(chunk):]
		o := &opDropUnits{Spec: sp.name.Bytes, Now: ns.expire(), Archive: archive, Forget: forget}
		for _, v := range chunk {
			if sp.units[v.u.key] == v.u && still(v) {
				o.Keys = append(o.Keys, v.u.key)
			}
		}
		if first && len(forget) > 0 || len(o.Keys) > 0 {
			ns.commit(o)
			deleted += o.deleted
		}
		forget = nil
	}
	return deleted, nil
}

func byKey(a, b victim) int { return keyOrder(a.u, b.u) }

// newestFirst is the order opArchive keeps completed units in.
func newestFirst(a, b victim) int {
	return archiveOrder(a.exp, a.u.key, b.exp, b.u.key)
}

// deleteInChunks answers DeleteWorkUnits by status (q.Statuses) or all
// (q.All) on a spec of more than deleteChunk units.
func (ns *namespace) deleteInChunks(ctx context.Context, sp *spec, q coordinate.DeleteQuery) (int, error) {
	ctx = context.WithoutCancel(ctx)
	want := func(st coordinate.Status) bool { return q.All || slices.Contains(q.Statuses, st) }
	var forget []coordinate.Status
	size := 0
	for st := coordinate.StatusAvailable; st <= coordinate.StatusFailed; st++ {
		if !want(st) {
			continue
		}
		if sp.archived[st] > 0 {
			forget = append(forget, st)
		}
		size += sp.counts[st]
	}
	if size == 0 && len(forget) == 0 {
		return 0, nil
	}
	vs, err := ns.collectVictims(ctx, sp, size, func(u *unit) bool { return want(u.status) }, byKey)
	if err != nil {
		return 0, ns.gone(err)
	}
	// A BLOCKED victim failed by the removal of its dependency (an
	// earlier victim) goes, as in the one-shot op.
	still := func(v victim) bool {
		st := v.u.status
		return want(st) || want(coordinate.StatusBlocked) && st == coordinate.StatusFailed && v.u.ext != nil && v.u.ext.depFailed
	}
	n, err := ns.dropVictims(ctx, sp, vs, still, false, forget)
	return n, ns.gone(err)
}

// archiveInChunks answers Archive for the specs names, which hold more
// than deleteChunk units in all; now is the call's time (the age limit is
// measured from it, as in opArchive).
func (ns *namespace) archiveInChunks(ctx context.Context, names []string, policy coordinate.RetentionPolicy, now int64) error {
	ctx = context.WithoutCancel(ctx)
	for _, name := range names {
		sp := ns.st.specs[name]
		if sp == nil {
			continue
		}
		if err := ns.archiveSpec(ctx, sp, policy, now); ns.gone(err) != nil {
			return err
		}
	}
	return nil
}

// archiveSpec applies policy to one spec, FINISHED units then FAILED ones.
func (ns *namespace) archiveSpec(ctx context.Context, sp *spec, policy coordinate.RetentionPolicy, now int64) error {
	for _, st := range []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed} {
		if n := sp.counts[st]; n == 0 || n <= policy.MaxCount && policy.MaxAge <= 0 {
			continue // nothing to archive
		}
		vs, err := ns.collectVictims(ctx, sp, sp.counts[st], func(u *unit) bool { return u.status == st }, newestFirst)
		if err != nil {
			return err
		}
		drop := vs[:0]
		for i, v := range vs {
			if archives(policy, i, v.exp, now) {
				drop = append(drop, v)
			}
		}
		still := func(v victim) bool { return v.u.status == st && v.u.expiration == v.exp }
		if _, err := ns.dropVictims(ctx, sp, drop, still, true, nil); err != nil {
			return err
		}
	}
	return nil
}

// emptyInChunks removes every unit of sp in key order, as the walk of
// opDeleteWorkSpec would, before DeleteWorkSpec deletes the spec.
func (ns *namespace) emptyInChunks(ctx context.Context, sp *spec) error {
	ctx = context.WithoutCancel(ctx)
	vs, err := ns.collectVictims(ctx, sp, len(sp.units), func(*unit) bool { return true }, byKey)
	if err == nil {
		_, err = ns.dropVictims(ctx, sp, vs, func(victim) bool { return true }, false, nil)
	}
	return err
}

// gone turns the error of a spec deleted meanwhile into nil: its units
// are gone, which is what the call asked for. The caller holds ns.mu.
//
// The call then reports another call's deletion as its own success, so it
// must not be answered before that deletion is durable: its own records
// may all be durable already (a crash after the answer would bring the
// spec back). The deletion was appended under ns.mu before the lock came
// back to this call, so the call now waits for every record of ns
// appended so far (namespace.end).
func (ns *namespace) gone(err error) error {
	if errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		ns.ticket = max(ns.ticket, ns.appended)
		return nil
	}
	return err
}
