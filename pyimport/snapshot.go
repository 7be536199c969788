package pyimport

import (
	"errors"
	"fmt"
	"io"

	"github.com/coordinated/coordinated/coordinate"
)

// ReadSnapshot parses an uncompressed Python snapshot stream (file names
// it in errors): one CBOR item per work spec, the array
// WorkSpec.__getstate__ returns in coordinate 0.1.5 (work_spec.py):
//
//	[data, weight, status, continuous, [[key, unit], ...],
//	 archived_counts_by_status, interval, next_continuous, max_running]
//
// where unit is the WorkUnit's __dict__ {key, data, status, priority,
// lease_time, worker_id}. Like WorkSpec.__setstate__, it accepts the
// older 5- and 6-item forms (no archived counts; no interval,
// next_continuous, max_running).
func ReadSnapshot(file string, r io.Reader) (*State, error) {
	st := &State{Specs: make(map[string]*Spec)}
	ir := newItemReader(file, r)
	for {
		v, err := ir.next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return nil, err
		}
		sp, msg := parseSpec(v)
		if msg != "" {
			return nil, ir.errorf("work spec %d: %s", len(st.Specs)+1, msg)
		}
		if _, dup := st.Specs[sp.Name.Bytes]; dup {
			return nil, ir.errorf("work spec %q appears twice", sp.Name.Bytes)
		}
		st.Specs[sp.Name.Bytes] = sp
	}
}

// parseSpec reads one snapshot item; a non-empty message says what is
// wrong with it.
func parseSpec(v item) (*Spec, string) {
	f, ok := array(v)
	if !ok {
		return nil, fmt.Sprintf("expected the 9-item work spec array, got %s", describe(v))
	}
	if len(f) > 0 {
		if tag, ok := name(f[0]); ok && (tag.Bytes == "sws" || tag.Bytes == "pws") {
			return nil, fmt.Sprintf("a %q record: this snapshot was written by a Python daemon with %s, whose units are in that database, not in the snapshot; it cannot be imported (copy the queue with `coordinated migrate` from the running Python daemon instead)",
				tag.Bytes, map[string]string{"sws": "sqlite_path", "pws": "postgres_connect"}[tag.Bytes])
		}
	}
	if len(f) != 5 && len(f) != 6 && len(f) != 9 {
		return nil, fmt.Sprintf("expected a work spec array of 5, 6 or 9 items, got %d", len(f))
	}
	defn, ok := stringMap(f[0])
	if !ok {
		return nil, fmt.Sprintf("the definition must be a map, got %s", describe(f[0]))
	}
	nm, ok := name(defn["name"])
	if !ok {
		return nil, "the definition has no string \"name\""
	}
	sp := &Spec{
		Name:       nm,
		Definition: coordinate.Data(f[0]),
		Archived:   make(map[coordinate.Status]int),
		Units:      make(map[string]*Unit),
	}
	in := func(what string) string { return fmt.Sprintf("work spec %q: %s", nm.Bytes, what) }
	// control_work_spec stored weight, max_running and interval as the
	// client sent them (a float weight scheduled fine in Python): they
	// are read with int() and float(), as coordinated reads control
	// values.
	weight, ok := coordinate.PyInt(f[1])
	if !ok {
		return nil, in(fmt.Sprintf("weight must be an integer, got %s", describe(f[1])))
	}
	sp.Weight = int(weight)
	status, ok := integer(f[2])
	if !ok || (status != 1 && status != 2) {
		return nil, in(fmt.Sprintf("status must be 1 (runnable) or 2 (paused), got %s", describeInteger(f[2])))
	}
	sp.Paused = status == 2
	// control_work_spec stored `continuous` as sent (None included): it
	// counts by Python's truth value, as our daemon reads it.
	sp.Continuous = truthy(f[3])
	pairs, ok := array(f[4])
	if !ok {
		return nil, in(fmt.Sprintf("the work units must be an array of [key, unit] pairs, got %s", describe(f[4])))
	}
	for i, p := range pairs {
		u, msg := parseUnit(p)
		if msg != "" {
			return nil, in(fmt.Sprintf("work unit %d: %s", i+1, msg))
		}
		if _, dup := sp.Units[u.Key.Bytes]; dup {
			return nil, in(fmt.Sprintf("work unit %q appears twice", u.Key.Bytes))
		}
		sp.Units[u.Key.Bytes] = u
	}
	if len(f) >= 6 {
		counts, ok := stringMapOrIntMap(f[5])
		if !ok {
			return nil, in(fmt.Sprintf("archived counts must be a map of status to count, got %s", describe(f[5])))
		}
		for st, n := range counts {
			if !st.Completed() || n < 0 {
				return nil, in(fmt.Sprintf("archived count %d for status %d", n, int(st)))
			}
			if n > 0 {
				sp.Archived[st] = n
			}
		}
	}
	if len(f) == 9 {
		if !isNull(f[6]) {
			if sp.Interval, ok = pyFloat(f[6]); !ok {
				return nil, in(fmt.Sprintf("interval must be a number or null, got %s", describe(f[6])))
			}
		}
		if !isNull(f[7]) {
			if sp.NextContinuous, ok = number(f[7]); !ok {
				return nil, in(fmt.Sprintf("next_continuous must be a number, got %s", describe(f[7])))
			}
		}
		if !isNull(f[8]) {
			mr, ok := coordinate.PyInt(f[8])
			if !ok {
				return nil, in(fmt.Sprintf("max_running must be an integer or null, got %s", describe(f[8])))
			}
			sp.MaxRunning = coordinate.EncodeMaxRunning(mr)
		}
	}
	return sp, ""
}

// stringMapOrIntMap reads archived_counts_by_status: a map of integer
// status codes to integer counts.
func stringMapOrIntMap(v item) (map[coordinate.Status]int, bool) {
	if major(v) != 5 {
		return nil, false
	}
	var raw map[int64]int64
	if decMode.Unmarshal(v, &raw) != nil {
		return nil, false
	}
	out := make(map[coordinate.Status]int, len(raw))
	for k, n := range raw {
		out[coordinate.Status(k)] = int(n)
	}
	return out, true
}

// parseUnit reads one [key, unit-dict] pair.
func parseUnit(v item) (*Unit, string) {
	pair, ok := array(v)
	if !ok || len(pair) != 2 {
		return nil, fmt.Sprintf("expected a [key, unit] pair, got %s", describe(v))
	}
	key, ok := name(pair[0])
	if !ok {
		return nil, fmt.Sprintf("the key must be a string, got %s", describe(pair[0]))
	}
	d, ok := stringMap(pair[1])
	if !ok {
		return nil, fmt.Sprintf("unit %q: expected a map, got %s", key.Bytes, describe(pair[1]))
	}
	for _, field := range []string{"data", "status", "priority", "lease_time", "worker_id"} {
		if _, ok := d[field]; !ok {
			return nil, fmt.Sprintf("unit %q: no %q field", key.Bytes, field)
		}
	}
	u := &Unit{Key: key, Data: coordinate.Data(d["data"])}
	status, ok := integer(d["status"])
	if !ok || !coordinate.Status(status).Valid() || coordinate.Status(status) == coordinate.StatusBlocked {
		return nil, fmt.Sprintf("unit %q: status must be 1, 3, 4 or 5, got %s", key.Bytes, describeStatus(d["status"]))
	}
	u.Status = coordinate.Status(status)
	if u.Priority, ok = pyFloat(d["priority"]); !ok {
		return nil, fmt.Sprintf("unit %q: priority must be a number, got %s", key.Bytes, describe(d["priority"]))
	}
	if !isNull(d["lease_time"]) {
		if u.LeaseTime, ok = number(d["lease_time"]); !ok {
			return nil, fmt.Sprintf("unit %q: lease_time must be a number or null, got %s", key.Bytes, describe(d["lease_time"]))
		}
	}
	if u.Worker, ok = optName(d["worker_id"]); !ok {
		return nil, fmt.Sprintf("unit %q: worker_id must be a string or null, got %s", key.Bytes, describe(d["worker_id"]))
	}
	return u, ""
}
