package memory

import "fmt"

// Record format 1: what journals written before records had their own
// types hold (journal files of format 1, which report content version 0).
// The top level of each body is the same array as in format 2, but the
// API structs embedded then (coordinate.Name, UnitRef, WorkUnitInput,
// WorkSpecControl, DeleteQuery, WorkUnitUpdate, RetentionPolicy,
// Heartbeat) were encoded as maps keyed by their Go field names as they
// were at that time. They are frozen here as they were, so renaming an API
// field no longer changes what an old journal means; a key that is not
// listed here fails the replay (see recordV1DecMode). Kinds that embedded
// no API struct decode with their format 2 body.

type v1Name struct {
	Bytes string `cbor:"Bytes"`
	Text  bool   `cbor:"Text"`
}

type v1Ref struct {
	Spec string `cbor:"Spec"`
	Key  string `cbor:"Key"`
}

type v1UnitInput struct {
	Key       v1Name   `cbor:"Key"`
	Data      []byte   `cbor:"Data"`
	Priority  *float64 `cbor:"Priority"`
	Delay     int64    `cbor:"Delay"`
	DependsOn []v1Ref  `cbor:"DependsOn"`
	Group     string   `cbor:"Group"`
}

type v1Control struct {
	Paused     *bool  `cbor:"Paused"`
	Continuous *bool  `cbor:"Continuous"`
	Interval   *int64 `cbor:"Interval"`
	MaxRunning *int64 `cbor:"MaxRunning"`
	Weight     *int64 `cbor:"Weight"`
}

type v1DeleteQuery struct {
	All      bool     `cbor:"All"`
	Keys     []string `cbor:"Keys"`
	Statuses []int64  `cbor:"Statuses"`
}

type v1Update struct {
	Status    int64   `cbor:"Status"`
	LeaseTime *int64  `cbor:"LeaseTime"`
	Data      []byte  `cbor:"Data"`
	Worker    *v1Name `cbor:"Worker"`
}

type v1Retention struct {
	MaxCount int64 `cbor:"MaxCount"`
	MaxAge   int64 `cbor:"MaxAge"`
}

type v1Heartbeat struct {
	Worker v1Name  `cbor:"Worker"`
	Mode   []byte  `cbor:"Mode"`
	Data   []byte  `cbor:"Data"`
	Parent *v1Name `cbor:"Parent"`
	Expire int64   `cbor:"Expire"`
}

type v1ControlWorkSpec struct {
	_       struct{} `cbor:",toarray"`
	Spec    string
	Control v1Control
}

type v1AddWorkUnits struct {
	_     struct{} `cbor:",toarray"`
	Spec  string
	Now   int64
	Units []v1UnitInput
}

type v1DeleteWorkUnits struct {
	_     struct{} `cbor:",toarray"`
	Spec  string
	Query v1DeleteQuery
	Now   int64
}

type v1UpdateWorkUnit struct {
	_       struct{} `cbor:",toarray"`
	Spec    string
	Key     string
	Now     int64
	Update  v1Update
	LeaseID int64
}

type v1GetWork struct {
	_            struct{} `cbor:",toarray"`
	Now          int64
	Worker       v1Name
	Lease        int64
	Spec         string
	Count        int64
	Continuous   bool
	Keys         []string
	FirstLeaseID int64
}

type v1Archive struct {
	_      struct{} `cbor:",toarray"`
	Now    int64
	Specs  []string
	Policy v1Retention
}

type v1HeartbeatBody struct {
	_         struct{} `cbor:",toarray"`
	Now       int64
	Heartbeat v1Heartbeat
}

// newV1Body returns an empty format 1 body for the kinds whose layout
// differs from format 2, nil for the others.
func newV1Body(kind byte) any {
	switch kind {
	case recControlWorkSpec:
		return &v1ControlWorkSpec{}
	case recAddWorkUnits:
		return &v1AddWorkUnits{}
	case recDeleteWorkUnits:
		return &v1DeleteWorkUnits{}
	case recUpdateWorkUnit:
		return &v1UpdateWorkUnit{}
	case recGetWork:
		return &v1GetWork{}
	case recArchive:
		return &v1Archive{}
	case recHeartbeat:
		return &v1HeartbeatBody{}
	}
	return nil
}

// v1ToV2 converts a decoded format 1 body into the format 2 body with the
// same meaning.
func v1ToV2(body any) (any, error) {
	switch r := body.(type) {
	case *v1ControlWorkSpec:
		c := r.Control
		return &bodyControlWorkSpec{Spec: r.Spec, Control: recControl{Paused: c.Paused, Continuous: c.Continuous,
			Interval: c.Interval, MaxRunning: c.MaxRunning, Weight: c.Weight}}, nil
	case *v1AddWorkUnits:
		out := &bodyAddWorkUnits{Spec: r.Spec, Now: r.Now, Units: make([]recUnitInput, len(r.Units))}
		for i, in := range r.Units {
			out.Units[i] = recUnitInput{Key: in.Key.v2(), Data: in.Data, Priority: in.Priority, Delay: in.Delay,
				DependsOn: v1Refs(in.DependsOn), Group: in.Group}
		}
		return out, nil
	case *v1DeleteWorkUnits:
		q := r.Query
		return &bodyDeleteWorkUnits{Spec: r.Spec, Now: r.Now, Query: recDeleteQuery{All: q.All, Keys: q.Keys, Statuses: q.Statuses}}, nil
	case *v1UpdateWorkUnit:
		u := r.Update
		out := &bodyUpdateWorkUnit{Spec: r.Spec, Key: r.Key, Now: r.Now, LeaseID: r.LeaseID,
			Update: recUpdate{Status: u.Status, LeaseTime: u.LeaseTime, Data: u.Data}}
		if u.Worker != nil {
			w := u.Worker.v2()
			out.Update.Worker = &w
		}
		return out, nil
	case *v1GetWork:
		return &bodyGetWork{Now: r.Now, Worker: r.Worker.v2(), Lease: r.Lease, Spec: r.Spec, Count: r.Count,
			Continuous: r.Continuous, Keys: r.Keys, FirstLeaseID: r.FirstLeaseID}, nil
	case *v1Archive:
		return &bodyArchive{Now: r.Now, Specs: r.Specs, Policy: recRetention{MaxCount: r.Policy.MaxCount, MaxAge: r.Policy.MaxAge}}, nil
	case *v1HeartbeatBody:
		h := r.Heartbeat
		out := &bodyHeartbeat{Now: r.Now, Heartbeat: recWorker{Worker: h.Worker.v2(), Mode: h.Mode, Data: h.Data, Expire: h.Expire}}
		if h.Parent != nil {
			p := h.Parent.v2()
			out.Heartbeat.Parent = &p
		}
		return out, nil
	}
	return nil, fmt.Errorf("no format 2 body for %T", body)
}

func (n v1Name) v2() recName { return recName{Bytes: n.Bytes, Text: n.Text} }

func v1Refs(rs []v1Ref) []recRef {
	if rs == nil {
		return nil
	}
	out := make([]recRef, len(rs))
	for i, r := range rs {
		out[i] = recRef{Spec: r.Spec, Key: r.Key}
	}
	return out
}
