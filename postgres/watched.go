package postgres

import (
	"context"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// watchedNamespace is the coordinate.Namespace the Backend hands out: the
// namespace with every call's database work under the liveness watch
// (liveness.go), so a database that stops answering fails the call with
// coordinate.ErrUnavailable instead of hanging it.
type watchedNamespace struct {
	ns   *namespace
	live *liveness
}

var _ coordinate.Namespace = (*watchedNamespace)(nil)

// watched runs f under the watch.
func watched[T any](w *watchedNamespace, ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	ctx, end := w.live.watch(ctx)
	v, err := f(ctx)
	return v, end(err)
}

// watchedErr runs f, which returns only an error, under the watch.
func watchedErr(w *watchedNamespace, ctx context.Context, f func(context.Context) error) error {
	ctx, end := w.live.watch(ctx)
	return end(f(ctx))
}

func (w *watchedNamespace) Name() string { return w.ns.Name() }

func (w *watchedNamespace) SetWorkSpec(ctx context.Context, definition coordinate.Data) (*coordinate.WorkSpec, error) {
	return watched(w, ctx, func(ctx context.Context) (*coordinate.WorkSpec, error) { return w.ns.SetWorkSpec(ctx, definition) })
}

func (w *watchedNamespace) WorkSpec(ctx context.Context, name string) (*coordinate.WorkSpec, error) {
	return watched(w, ctx, func(ctx context.Context) (*coordinate.WorkSpec, error) { return w.ns.WorkSpec(ctx, name) })
}

func (w *watchedNamespace) ListWorkSpecs(ctx context.Context, start string, limit int) (specs []*coordinate.WorkSpec, next *coordinate.Name, err error) {
	err = watchedErr(w, ctx, func(ctx context.Context) error {
		specs, next, err = w.ns.ListWorkSpecs(ctx, start, limit)
		return err
	})
	return specs, next, err
}

func (w *watchedNamespace) ControlWorkSpec(ctx context.Context, name string, control coordinate.WorkSpecControl) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.ControlWorkSpec(ctx, name, control) })
}

func (w *watchedNamespace) DeleteWorkSpec(ctx context.Context, name string) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.DeleteWorkSpec(ctx, name) })
}

func (w *watchedNamespace) Clear(ctx context.Context) (int, error) {
	return watched(w, ctx, w.ns.Clear)
}

func (w *watchedNamespace) AddWorkUnits(ctx context.Context, spec string, units []coordinate.WorkUnitInput) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.AddWorkUnits(ctx, spec, units) })
}

func (w *watchedNamespace) CountWorkUnits(ctx context.Context, spec string) (map[coordinate.Status]int, error) {
	return watched(w, ctx, func(ctx context.Context) (map[coordinate.Status]int, error) { return w.ns.CountWorkUnits(ctx, spec) })
}

func (w *watchedNamespace) ListWorkUnits(ctx context.Context, spec string, query coordinate.WorkUnitQuery) ([]*coordinate.WorkUnit, error) {
	return watched(w, ctx, func(ctx context.Context) ([]*coordinate.WorkUnit, error) { return w.ns.ListWorkUnits(ctx, spec, query) })
}

func (w *watchedNamespace) GetWorkUnits(ctx context.Context, spec string, keys []string) ([]*coordinate.WorkUnit, error) {
	return watched(w, ctx, func(ctx context.Context) ([]*coordinate.WorkUnit, error) { return w.ns.GetWorkUnits(ctx, spec, keys) })
}

func (w *watchedNamespace) PrioritizeWorkUnits(ctx context.Context, spec string, keys []string, priority *float64, adjustment float64) (int, error) {
	return watched(w, ctx, func(ctx context.Context) (int, error) {
		return w.ns.PrioritizeWorkUnits(ctx, spec, keys, priority, adjustment)
	})
}

func (w *watchedNamespace) DeleteWorkUnits(ctx context.Context, spec string, query coordinate.DeleteQuery) (int, error) {
	return watched(w, ctx, func(ctx context.Context) (int, error) { return w.ns.DeleteWorkUnits(ctx, spec, query) })
}

func (w *watchedNamespace) UpdateWorkUnit(ctx context.Context, spec, key string, update coordinate.WorkUnitUpdate) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.UpdateWorkUnit(ctx, spec, key, update) })
}

func (w *watchedNamespace) RetryWorkUnits(ctx context.Context, spec string, keys []string) (int, error) {
	return watched(w, ctx, func(ctx context.Context) (int, error) { return w.ns.RetryWorkUnits(ctx, spec, keys) })
}

func (w *watchedNamespace) Archive(ctx context.Context, names []string, policy coordinate.RetentionPolicy) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.Archive(ctx, names, policy) })
}

func (w *watchedNamespace) GetWork(ctx context.Context, req coordinate.WorkRequest) ([]coordinate.Attempt, error) {
	return watched(w, ctx, func(ctx context.Context) ([]coordinate.Attempt, error) { return w.ns.GetWork(ctx, req) })
}

func (w *watchedNamespace) UpdateAttempt(ctx context.Context, ref coordinate.AttemptRef, update coordinate.WorkUnitUpdate) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.UpdateAttempt(ctx, ref, update) })
}

func (w *watchedNamespace) WorkerHeartbeat(ctx context.Context, hb coordinate.Heartbeat) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.WorkerHeartbeat(ctx, hb) })
}

func (w *watchedNamespace) UnregisterWorker(ctx context.Context, id string) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.UnregisterWorker(ctx, id) })
}

func (w *watchedNamespace) Workers(ctx context.Context) ([]*coordinate.WorkerInfo, error) {
	return watched(w, ctx, w.ns.Workers)
}

func (w *watchedNamespace) Worker(ctx context.Context, id string) (*coordinate.WorkerInfo, error) {
	return watched(w, ctx, func(ctx context.Context) (*coordinate.WorkerInfo, error) { return w.ns.Worker(ctx, id) })
}

func (w *watchedNamespace) ChildWorkUnits(ctx context.Context, parent string) ([]coordinate.ChildWorker, error) {
	return watched(w, ctx, func(ctx context.Context) ([]coordinate.ChildWorker, error) { return w.ns.ChildWorkUnits(ctx, parent) })
}

func (w *watchedNamespace) GroupStatus(ctx context.Context, group string) (*coordinate.GroupStatus, error) {
	return watched(w, ctx, func(ctx context.Context) (*coordinate.GroupStatus, error) { return w.ns.GroupStatus(ctx, group) })
}

func (w *watchedNamespace) StalledGroups(ctx context.Context) ([]*coordinate.GroupStatus, error) {
	return watched(w, ctx, w.ns.StalledGroups)
}

func (w *watchedNamespace) CancelGroup(ctx context.Context, group string) (int, error) {
	return watched(w, ctx, func(ctx context.Context) (int, error) { return w.ns.CancelGroup(ctx, group) })
}

func (w *watchedNamespace) LockPaths(ctx context.Context, owner coordinate.Name, ttl time.Duration, paths []coordinate.LockPath, all bool) (locked []bool, refused int, err error) {
	err = watchedErr(w, ctx, func(ctx context.Context) error {
		locked, refused, err = w.ns.LockPaths(ctx, owner, ttl, paths, all)
		return err
	})
	return locked, refused, err
}

func (w *watchedNamespace) RenewLocks(ctx context.Context, owner coordinate.Name, ttl time.Duration, paths []coordinate.LockPath) (refused int, holder *coordinate.Name, err error) {
	err = watchedErr(w, ctx, func(ctx context.Context) error {
		refused, holder, err = w.ns.RenewLocks(ctx, owner, ttl, paths)
		return err
	})
	return refused, holder, err
}

func (w *watchedNamespace) UnlockPaths(ctx context.Context, owner coordinate.Name, paths []coordinate.LockPath) (refused int, holder *coordinate.Name, err error) {
	err = watchedErr(w, ctx, func(ctx context.Context) error {
		refused, holder, err = w.ns.UnlockPaths(ctx, owner, paths)
		return err
	})
	return refused, holder, err
}

func (w *watchedNamespace) ReadLocks(ctx context.Context, paths []coordinate.LockPath) ([]*coordinate.Name, error) {
	return watched(w, ctx, func(ctx context.Context) ([]*coordinate.Name, error) { return w.ns.ReadLocks(ctx, paths) })
}

func (w *watchedNamespace) DropLocks(ctx context.Context, path coordinate.LockPath) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.DropLocks(ctx, path) })
}

// The optional monitoring interfaces the namespace has (stats.go).
var (
	_ coordinate.StatsReader      = (*watchedNamespace)(nil)
	_ coordinate.GroupLister      = (*watchedNamespace)(nil)
	_ coordinate.WorkerUnitLister = (*watchedNamespace)(nil)
)

func (w *watchedNamespace) Stats(ctx context.Context) (*coordinate.NamespaceStats, error) {
	return watched(w, ctx, w.ns.Stats)
}

func (w *watchedNamespace) GroupUnits(ctx context.Context, group string, limit int) (units []*coordinate.WorkUnit, more bool, err error) {
	err = watchedErr(w, ctx, func(ctx context.Context) error {
		units, more, err = w.ns.GroupUnits(ctx, group, limit)
		return err
	})
	return units, more, err
}

func (w *watchedNamespace) WorkerUnits(ctx context.Context, worker string) ([]coordinate.ChildWorkUnit, error) {
	return watched(w, ctx, func(ctx context.Context) ([]coordinate.ChildWorkUnit, error) { return w.ns.WorkerUnits(ctx, worker) })
}

func (w *watchedNamespace) ImportWorkSpec(ctx context.Context, spec *coordinate.ImportedWorkSpec) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.ImportWorkSpec(ctx, spec) })
}

func (w *watchedNamespace) ImportWorkSpecs(ctx context.Context, specs []*coordinate.ImportedWorkSpec, replace bool) error {
	return watchedErr(w, ctx, func(ctx context.Context) error { return w.ns.ImportWorkSpecs(ctx, specs, replace) })
}

var _ coordinate.BulkImporter = (*watchedNamespace)(nil)
