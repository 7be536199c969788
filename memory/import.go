package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/journal"
)

// maxImportRecord bounds the journal record of one import, well below
// journal.MaxRecordSize (the encoding adds a few bytes per field).
const maxImportRecord = journal.MaxRecordSize / 2

var _ coordinate.ImportChecker = (*namespace)(nil)

// CheckImport returns the error ImportWorkSpec would return for in
// because of in itself (coordinate.ImportChecker), or nil.
func (ns *namespace) CheckImport(in *coordinate.ImportedWorkSpec) error {
	_, _, err := ns.checkImport(in)
	return err
}

// checkImport is every check of ImportWorkSpec that depends on the input
// alone: coordinate.ResolveImport's, and, with a journal, that the spec
// fits in one record. It returns what ResolveImport does.
func (ns *namespace) checkImport(in *coordinate.ImportedWorkSpec) (coordinate.Name, coordinate.WorkSpecMeta, error) {
	name, meta, err := coordinate.ResolveImport(in)
	if err != nil {
		return coordinate.Name{}, coordinate.WorkSpecMeta{}, err
	}
	if ns.wal == nil {
		return name, meta, nil
	}
	size := len(in.Definition)
	for _, u := range in.Units {
		size += len(u.Key.Bytes) + len(u.Data) + 64
		if u.Worker != nil {
			size += len(u.Worker.Bytes)
		}
	}
	if size > maxImportRecord {
		return coordinate.Name{}, coordinate.WorkSpecMeta{}, fmt.Errorf("work spec %q: about %d bytes of units is more than one journal record holds (%d); import it into PostgreSQL", name.Bytes, size, maxImportRecord)
	}
	return name, meta, nil
}

// ImportWorkSpec creates a spec and its units exactly as given
// (coordinate.ImportedWorkSpec), as one op and so one journal record.
func (ns *namespace) ImportWorkSpec(ctx context.Context, in *coordinate.ImportedWorkSpec) (err error) {
	name, meta, err := ns.checkImport(in)
	if err != nil {
		return err
	}
	o := &opImportWorkSpec{
		Definition: slices.Clone(in.Definition),
		Paused:     meta.Paused,
		Continuous: meta.Continuous,
		Interval:   int64(meta.Interval),
		NextCont:   nanos(meta.NextContinuous),
		MaxRunning: int64(meta.MaxRunning),
		Weight:     int64(meta.Weight),
		Finished:   int64(in.Archived[coordinate.StatusFinished]),
		Failed:     int64(in.Archived[coordinate.StatusFailed]),
		Units:      make([]importedUnit, len(in.Units)),
	}
	for i, u := range in.Units {
		iu := importedUnit{
			Key: u.Key.Bytes, KeyText: u.Key.Text, Data: cloneData(u.Data),
			Status: int64(u.Status), Priority: u.Priority, Expiration: nanos(u.Expiration),
		}
		if u.Worker != nil {
			iu.HasWorker, iu.Worker, iu.WorkerText = true, u.Worker.Bytes, u.Worker.Text
		}
		o.Units[i] = iu
	}
	if _, err := ns.begin(ctx); err != nil {
		return err
	}
	defer ns.end(ctx, &err)
	if _, exists := ns.st.specs[name.Bytes]; exists {
		return fmt.Errorf("%w %q", coordinate.ErrWorkSpecExists, name.Bytes)
	}
	ns.commit(o)
	return nil
}

// opImportWorkSpec creates a spec with its units in the state given. Its
// fields are plain values, so the journal record does not depend on the
// coordinate package's struct layout.
type opImportWorkSpec struct {
	_ struct{} `cbor:",toarray"`

	Definition []byte
	Paused     bool
	Continuous bool
	Interval   int64 // nanoseconds
	NextCont   int64 // Unix nanoseconds, 0 = none
	MaxRunning int64
	Weight     int64
	Finished   int64 // archived FINISHED count
	Failed     int64 // archived FAILED count
	Units      []importedUnit
}

// importedUnit is one unit of opImportWorkSpec.
type importedUnit struct {
	_ struct{} `cbor:",toarray"`

	Key        string
	KeyText    bool
	Data       []byte
	Status     int64
	Priority   float64
	Expiration int64 // Unix nanoseconds, 0 = none
	HasWorker  bool
	Worker     string
	WorkerText bool
}

func (o *opImportWorkSpec) apply(s *state) {
	name, meta, _ := coordinate.ParseWorkSpec(o.Definition)
	meta.Paused = o.Paused
	meta.Continuous = o.Continuous
	meta.Interval = time.Duration(o.Interval)
	meta.NextContinuous = timeOf(o.NextCont)
	meta.MaxRunning = int(o.MaxRunning)
	meta.Weight = int(o.Weight)
	sp := newSpec(name)
	sp.definition = o.Definition
	sp.meta = meta
	sp.archived[coordinate.StatusFinished] = int(o.Finished)
	sp.archived[coordinate.StatusFailed] = int(o.Failed)
	s.specs[name.Bytes] = sp
	// Units elsewhere waiting on these keys are left as they are (see
	// coordinate.Namespace.ImportWorkSpec): place must not resolve or
	// fail them.
	dependents := s.dependents
	s.dependents = nil
	defer func() {
		s.dependents = dependents
		if s.depTargets[name.Bytes] > 0 { // which state.link did not see
			for key := range sp.units {
				if s.waitedFor(name.Bytes, key) {
					sp.waited++
				}
			}
		}
	}()
	for i := range o.Units {
		iu := &o.Units[i]
		u := &unit{
			spec: sp, key: iu.Key, keyText: iu.KeyText, data: iu.Data,
			priority: iu.Priority, expiration: iu.Expiration, heapIdx: -1,
		}
		s.born(u)
		if iu.HasWorker {
			u.setWorker(&coordinate.Name{Bytes: iu.Worker, Text: iu.WorkerText})
			u.attempts = 1
		}
		s.link(sp, u)
		status := coordinate.Status(iu.Status)
		s.place(u, status, 0) // no delay, no group: the time is not used
		if status == coordinate.StatusPending {
			u.leaseID = s.nextLease
			s.nextLease++
		}
	}
}
