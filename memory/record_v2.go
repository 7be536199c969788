package memory

import (
	"fmt"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// Record bodies of record format 2 (docs/persistence.md). Each is a CBOR
// array of the fields below, in this order, all the way down: no field
// name and no `coordinate` API type is on disk, so renaming or reordering
// an API struct cannot change what a journal means. Adding, removing or
// reordering a field here changes the format: bump recordFormat, keep a
// reader for the old one (record_v1.go is the example) and update the
// golden files (testdata/records-v*). Durations and times are int64
// nanoseconds; statuses are the protocol's numbers.

type recName struct {
	_     struct{} `cbor:",toarray"`
	Bytes string
	Text  bool
}

type recRef struct {
	_    struct{} `cbor:",toarray"`
	Spec string
	Key  string
}

type recUnitInput struct {
	_         struct{} `cbor:",toarray"`
	Key       recName
	Data      []byte
	Priority  *float64
	Delay     int64
	DependsOn []recRef
	Group     string
}

type recUpdate struct {
	_         struct{} `cbor:",toarray"`
	Status    int64
	LeaseTime *int64
	Data      []byte
	Worker    *recName
}

type recControl struct {
	_          struct{} `cbor:",toarray"`
	Paused     *bool
	Continuous *bool
	Interval   *int64
	MaxRunning *int64
	Weight     *int64
}

type recDeleteQuery struct {
	_        struct{} `cbor:",toarray"`
	All      bool
	Keys     []string
	Statuses []int64
}

type recRetention struct {
	_        struct{} `cbor:",toarray"`
	MaxCount int64
	MaxAge   int64
}

type recWorker struct {
	_      struct{} `cbor:",toarray"`
	Worker recName
	Mode   []byte
	Data   []byte
	Parent *recName
	Expire int64
}

// One body per record kind.

type bodySetWorkSpec struct {
	_          struct{} `cbor:",toarray"`
	Definition []byte
}

type bodyControlWorkSpec struct {
	_       struct{} `cbor:",toarray"`
	Spec    string
	Control recControl
}

type bodyDeleteWorkSpec struct {
	_    struct{} `cbor:",toarray"`
	Spec string
	Now  int64
}

type bodyClear struct {
	_ struct{} `cbor:",toarray"`
}

type bodyAddWorkUnits struct {
	_     struct{} `cbor:",toarray"`
	Spec  string
	Now   int64
	Units []recUnitInput
}

type bodyPrioritizeWorkUnits struct {
	_          struct{} `cbor:",toarray"`
	Spec       string
	Keys       []string
	Priority   *float64
	Adjustment float64
}

type bodyDeleteWorkUnits struct {
	_     struct{} `cbor:",toarray"`
	Spec  string
	Query recDeleteQuery
	Now   int64
}

type bodyDropUnits struct {
	_       struct{} `cbor:",toarray"`
	Spec    string
	Now     int64
	Keys    []string
	Archive bool
	Forget  []int64
}

type bodyUpdateWorkUnit struct {
	_       struct{} `cbor:",toarray"`
	Spec    string
	Key     string
	Now     int64
	Update  recUpdate
	LeaseID int64
}

type bodyExpire struct {
	_   struct{} `cbor:",toarray"`
	Now int64
}

type bodyGetWork struct {
	_            struct{} `cbor:",toarray"`
	Now          int64
	Worker       recName
	Lease        int64
	Spec         string
	Count        int64
	Continuous   bool
	Keys         []string
	FirstLeaseID int64
}

type bodyArchive struct {
	_      struct{} `cbor:",toarray"`
	Now    int64
	Specs  []string
	Policy recRetention
}

type bodyHeartbeat struct {
	_         struct{} `cbor:",toarray"`
	Now       int64
	Heartbeat recWorker
}

type bodyUnregisterWorker struct {
	_      struct{} `cbor:",toarray"`
	Worker string
}

type bodyCancelGroup struct {
	_     struct{} `cbor:",toarray"`
	Group string
	Now   int64
}

type bodyImportWorkSpec struct {
	_          struct{} `cbor:",toarray"`
	Definition []byte
	Paused     bool
	Continuous bool
	Interval   int64
	NextCont   int64
	MaxRunning int64
	Weight     int64
	Finished   int64
	Failed     int64
	Units      []recImportedUnit
}

type recImportedUnit struct {
	_          struct{} `cbor:",toarray"`
	Key        string
	KeyText    bool
	Data       []byte
	Status     int64
	Priority   float64
	Expiration int64
	HasWorker  bool
	Worker     string
	WorkerText bool
}

// bodyScratch holds the bodies of the hot records (lease, update, add) for
// reuse, so encoding them allocates nothing (recordEncoder owns one).
type bodyScratch struct {
	getWork bodyGetWork
	update  bodyUpdateWorkUnit
	add     bodyAddWorkUnits
	lease   int64
	worker  recName
}

// reset drops every reference to the last op, keeping the unit slice.
func (sc *bodyScratch) reset() {
	units := sc.add.Units
	clear(units)
	if cap(units) > 1<<12 {
		units = nil // an unusually large add: do not keep it
	}
	*sc = bodyScratch{add: bodyAddWorkUnits{Units: units[:0]}}
}

// recordBody converts an op into its format 2 body, using sc for the hot
// kinds: the body is valid until sc.reset.
func recordBody(o op, sc *bodyScratch) any {
	switch o := o.(type) {
	case *opSetWorkSpec:
		return &bodySetWorkSpec{Definition: o.Definition}
	case *opControlWorkSpec:
		c := o.Control
		return &bodyControlWorkSpec{Spec: o.Spec, Control: recControl{
			Paused: c.Paused, Continuous: c.Continuous, Interval: durPtr(c.Interval),
			MaxRunning: intPtr(c.MaxRunning), Weight: intPtr(c.Weight),
		}}
	case *opDeleteWorkSpec:
		return &bodyDeleteWorkSpec{Spec: o.Spec, Now: o.Now}
	case *opClear:
		return &bodyClear{}
	case *opAddWorkUnits:
		r := &sc.add
		r.Spec, r.Now = o.Spec, o.Now
		for i := range o.Units {
			in := &o.Units[i]
			r.Units = append(r.Units, recUnitInput{Key: recNameOf(in.Key), Data: in.Data, Priority: in.Priority,
				Delay: int64(in.Delay), DependsOn: recRefsOf(in.DependsOn), Group: in.Group})
		}
		return r
	case *opPrioritizeWorkUnits:
		return &bodyPrioritizeWorkUnits{Spec: o.Spec, Keys: o.Keys, Priority: o.Priority, Adjustment: o.Adjustment}
	case *opDeleteWorkUnits:
		q := recDeleteQuery{All: o.Query.All, Keys: o.Query.Keys, Statuses: recStatusesOf(o.Query.Statuses)}
		return &bodyDeleteWorkUnits{Spec: o.Spec, Query: q, Now: o.Now}
	case *opDropUnits:
		return &bodyDropUnits{Spec: o.Spec, Now: o.Now, Keys: o.Keys, Archive: o.Archive, Forget: recStatusesOf(o.Forget)}
	case *opUpdateWorkUnit:
		u := o.Update
		r := &sc.update
		*r = bodyUpdateWorkUnit{Spec: o.Spec, Key: o.Key, Now: o.Now, LeaseID: o.LeaseID,
			Update: recUpdate{Status: int64(u.Status), Data: u.Data}}
		if u.LeaseTime != nil {
			sc.lease = int64(*u.LeaseTime)
			r.Update.LeaseTime = &sc.lease
		}
		if u.Worker != nil {
			sc.worker = recNameOf(*u.Worker)
			r.Update.Worker = &sc.worker
		}
		return r
	case *opExpire:
		return &bodyExpire{Now: o.Now}
	case *opGetWork:
		sc.getWork = bodyGetWork{Now: o.Now, Worker: recNameOf(o.Worker), Lease: int64(o.Lease), Spec: o.Spec,
			Count: int64(o.Count), Continuous: o.Continuous, Keys: o.Keys, FirstLeaseID: o.FirstLeaseID}
		return &sc.getWork
	case *opArchive:
		return &bodyArchive{Now: o.Now, Specs: o.Specs,
			Policy: recRetention{MaxCount: int64(o.Policy.MaxCount), MaxAge: int64(o.Policy.MaxAge)}}
	case *opHeartbeat:
		h := o.Heartbeat
		r := &bodyHeartbeat{Now: o.Now, Heartbeat: recWorker{Worker: recNameOf(h.Worker),
			Mode: h.Mode, Data: h.Data, Expire: int64(h.Expire)}}
		if h.Parent != nil {
			p := recNameOf(*h.Parent)
			r.Heartbeat.Parent = &p
		}
		return r
	case *opUnregisterWorker:
		return &bodyUnregisterWorker{Worker: o.Worker}
	case *opCancelGroup:
		return &bodyCancelGroup{Group: o.Group, Now: o.Now}
	case *opImportWorkSpec:
		r := &bodyImportWorkSpec{Definition: o.Definition, Paused: o.Paused, Continuous: o.Continuous,
			Interval: o.Interval, NextCont: o.NextCont, MaxRunning: o.MaxRunning, Weight: o.Weight,
			Finished: o.Finished, Failed: o.Failed}
		if o.Units != nil {
			r.Units = make([]recImportedUnit, len(o.Units))
			for i, u := range o.Units {
				r.Units[i] = recImportedUnit{Key: u.Key, KeyText: u.KeyText, Data: u.Data, Status: u.Status,
					Priority: u.Priority, Expiration: u.Expiration, HasWorker: u.HasWorker, Worker: u.Worker, WorkerText: u.WorkerText}
			}
		}
		return r
	}
	panic(fmt.Sprintf("memory: op %T has no journal record body", o))
}

// newRecordBody returns an empty format 2 body of a record kind, nil for
// an unknown kind.
func newRecordBody(kind byte) any {
	switch kind {
	case recSetWorkSpec:
		return &bodySetWorkSpec{}
	case recControlWorkSpec:
		return &bodyControlWorkSpec{}
	case recDeleteWorkSpec:
		return &bodyDeleteWorkSpec{}
	case recClear:
		return &bodyClear{}
	case recAddWorkUnits:
		return &bodyAddWorkUnits{}
	case recPrioritizeWorkUnits:
		return &bodyPrioritizeWorkUnits{}
	case recDeleteWorkUnits:
		return &bodyDeleteWorkUnits{}
	case recDropUnits:
		return &bodyDropUnits{}
	case recUpdateWorkUnit:
		return &bodyUpdateWorkUnit{}
	case recExpire:
		return &bodyExpire{}
	case recGetWork:
		return &bodyGetWork{}
	case recArchive:
		return &bodyArchive{}
	case recHeartbeat:
		return &bodyHeartbeat{}
	case recUnregisterWorker:
		return &bodyUnregisterWorker{}
	case recCancelGroup:
		return &bodyCancelGroup{}
	case recImportWorkSpec:
		return &bodyImportWorkSpec{}
	}
	return nil
}

// bodyOp converts a decoded format 2 body back into its op.
func bodyOp(body any) (op, error) {
	switch r := body.(type) {
	case *bodySetWorkSpec:
		return &opSetWorkSpec{Definition: r.Definition}, nil
	case *bodyControlWorkSpec:
		c := r.Control
		return &opControlWorkSpec{Spec: r.Spec, Control: coordinate.WorkSpecControl{
			Paused: c.Paused, Continuous: c.Continuous, Interval: durOf(c.Interval),
			MaxRunning: intOf(c.MaxRunning), Weight: intOf(c.Weight),
		}}, nil
	case *bodyDeleteWorkSpec:
		return &opDeleteWorkSpec{Spec: r.Spec, Now: r.Now}, nil
	case *bodyClear:
		return &opClear{}, nil
	case *bodyAddWorkUnits:
		o := &opAddWorkUnits{Spec: r.Spec, Now: r.Now, Units: make([]coordinate.WorkUnitInput, len(r.Units))}
		for i := range r.Units {
			in := &r.Units[i]
			o.Units[i] = coordinate.WorkUnitInput{Key: in.Key.name(), Data: in.Data, Priority: in.Priority,
				Delay: time.Duration(in.Delay), DependsOn: unitRefsOf(in.DependsOn), Group: in.Group}
		}
		return o, nil
	case *bodyPrioritizeWorkUnits:
		return &opPrioritizeWorkUnits{Spec: r.Spec, Keys: r.Keys, Priority: r.Priority, Adjustment: r.Adjustment}, nil
	case *bodyDeleteWorkUnits:
		statuses, err := statusesOf(r.Query.Statuses)
		if err != nil {
			return nil, fmt.Errorf("delete of spec %q: %w", r.Spec, err)
		}
		q := coordinate.DeleteQuery{All: r.Query.All, Keys: r.Query.Keys, Statuses: statuses}
		return &opDeleteWorkUnits{Spec: r.Spec, Query: q, Now: r.Now}, nil
	case *bodyDropUnits:
		forget, err := statusesOf(r.Forget)
		if err != nil {
			return nil, fmt.Errorf("deleting units of spec %q: %w", r.Spec, err)
		}
		return &opDropUnits{Spec: r.Spec, Now: r.Now, Keys: r.Keys, Archive: r.Archive, Forget: forget}, nil
	case *bodyUpdateWorkUnit:
		u := r.Update
		o := &opUpdateWorkUnit{Spec: r.Spec, Key: r.Key, Now: r.Now, LeaseID: r.LeaseID,
			Update: coordinate.WorkUnitUpdate{Status: coordinate.Status(u.Status), LeaseTime: durOf(u.LeaseTime), Data: u.Data}}
		if s := o.Update.Status; s != 0 && !s.Valid() {
			return nil, fmt.Errorf("update of unit %q of spec %q: invalid status %d", r.Key, r.Spec, u.Status)
		}
		if u.Worker != nil {
			w := u.Worker.name()
			o.Update.Worker = &w
		}
		return o, nil
	case *bodyExpire:
		return &opExpire{Now: r.Now}, nil
	case *bodyGetWork:
		if r.Count < 0 || r.Count > int64(len(r.Keys))+1<<20 {
			return nil, fmt.Errorf("get_work on spec %q: implausible count %d", r.Spec, r.Count)
		}
		return &opGetWork{Now: r.Now, Worker: r.Worker.name(), Lease: time.Duration(r.Lease), Spec: r.Spec,
			Count: int(r.Count), Continuous: r.Continuous, Keys: r.Keys, FirstLeaseID: r.FirstLeaseID}, nil
	case *bodyArchive:
		return &opArchive{Now: r.Now, Specs: r.Specs, Policy: coordinate.RetentionPolicy{
			MaxCount: int(r.Policy.MaxCount), MaxAge: time.Duration(r.Policy.MaxAge)}}, nil
	case *bodyHeartbeat:
		h := r.Heartbeat
		o := &opHeartbeat{Now: r.Now, Heartbeat: coordinate.Heartbeat{Worker: h.Worker.name(),
			Mode: h.Mode, Data: h.Data, Expire: time.Duration(h.Expire)}}
		if h.Parent != nil {
			p := h.Parent.name()
			o.Heartbeat.Parent = &p
		}
		return o, nil
	case *bodyUnregisterWorker:
		return &opUnregisterWorker{Worker: r.Worker}, nil
	case *bodyCancelGroup:
		return &opCancelGroup{Group: r.Group, Now: r.Now}, nil
	case *bodyImportWorkSpec:
		o := &opImportWorkSpec{Definition: r.Definition, Paused: r.Paused, Continuous: r.Continuous,
			Interval: r.Interval, NextCont: r.NextCont, MaxRunning: r.MaxRunning, Weight: r.Weight,
			Finished: r.Finished, Failed: r.Failed}
		if r.Units != nil {
			o.Units = make([]importedUnit, len(r.Units))
			for i, u := range r.Units {
				o.Units[i] = importedUnit{Key: u.Key, KeyText: u.KeyText, Data: u.Data, Status: u.Status,
					Priority: u.Priority, Expiration: u.Expiration, HasWorker: u.HasWorker, Worker: u.Worker, WorkerText: u.WorkerText}
			}
		}
		return o, nil
	}
	return nil, fmt.Errorf("no op for record body %T", body)
}

// recStatusesOf writes statuses as the protocol's numbers (nil stays nil).
func recStatusesOf(sts []coordinate.Status) []int64 {
	if sts == nil {
		return nil
	}
	out := make([]int64, len(sts))
	for i, st := range sts {
		out[i] = int64(st)
	}
	return out
}

// statusesOf reads statuses written by recStatusesOf.
func statusesOf(sts []int64) ([]coordinate.Status, error) {
	if sts == nil {
		return nil, nil
	}
	out := make([]coordinate.Status, len(sts))
	for i, st := range sts {
		if out[i] = coordinate.Status(st); !out[i].Valid() {
			return nil, fmt.Errorf("invalid status %d", st)
		}
	}
	return out, nil
}

func recNameOf(n coordinate.Name) recName { return recName{Bytes: n.Bytes, Text: n.Text} }
func (n recName) name() coordinate.Name   { return coordinate.Name{Bytes: n.Bytes, Text: n.Text} }

func recRefsOf(rs []coordinate.UnitRef) []recRef {
	if rs == nil {
		return nil
	}
	out := make([]recRef, len(rs))
	for i, r := range rs {
		out[i] = recRef{Spec: r.Spec, Key: r.Key}
	}
	return out
}

func unitRefsOf(rs []recRef) []coordinate.UnitRef {
	if rs == nil {
		return nil
	}
	out := make([]coordinate.UnitRef, len(rs))
	for i, r := range rs {
		out[i] = coordinate.UnitRef{Spec: r.Spec, Key: r.Key}
	}
	return out
}

func durOf(v *int64) *time.Duration {
	if v == nil {
		return nil
	}
	d := time.Duration(*v)
	return &d
}

func intPtr(n *int) *int64 {
	if n == nil {
		return nil
	}
	v := int64(*n)
	return &v
}

func intOf(v *int64) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

func durPtr(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	v := int64(*d)
	return &v
}
