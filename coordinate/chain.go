package coordinate

import (
	"math"

	"github.com/fxamacker/cbor/v2"
)

// ChainedUnits interprets the `output` of a finishing unit's data
// (SEMANTICS §10): a map {key: data} gives one unit per entry; a list (or
// tag-128 tuple) gives one unit per element, each a string key (data {})
// or a [key, data], [key, data, meta] or [key, data, meta, priority] list
// with the meaning of an add_work_units item, where a non-null number as
// 4th element overrides meta's priority. Keys may be byte or text strings.
// Malformed elements are skipped; this never fails. Units without an
// explicit priority get parentPriority. It returns nil when data is not a
// map with a non-empty output. The returned Data values share memory with
// data.
func ChainedUnits(data Data, parentPriority float64) []WorkUnitInput {
	units := ChainedInputs(data)
	for i := range units {
		if units[i].Priority == nil {
			p := parentPriority
			units[i].Priority = &p
		}
	}
	return units
}

// ChainedInputs is ChainedUnits before the parent's priority is filled
// in: a unit without an explicit priority has a nil Priority, for a
// caller that fills it in where the parent's priority is known (the
// PostgreSQL backend's fast chaining finish, in its statement).
func ChainedInputs(data Data) []WorkUnitInput {
	pairs, isMap, err := rawMap(data)
	if err != nil || !isMap {
		return nil
	}
	output, ok := stringKeyed(pairs)["output"]
	if !ok || !Truthy(output) {
		return nil
	}
	var units []WorkUnitInput
	if entries, isMap, err := rawMap(output); err == nil && isMap {
		for _, e := range entries {
			key, ok := rawString(e.Key)
			if !ok {
				continue
			}
			units = append(units, WorkUnitInput{Key: key, Data: Data(e.Value)})
		}
	} else if elems, isList, err := rawList(output); err == nil && isList {
		for _, e := range elems {
			if u, ok := chainedElement(e); ok {
				units = append(units, u)
			}
		}
	}
	return units
}

// chainedElement reads one element of a list-form output.
func chainedElement(e cbor.RawMessage) (WorkUnitInput, bool) {
	if key, ok := rawString(e); ok {
		return WorkUnitInput{Key: key, Data: EmptyMap}, true
	}
	parts, isList, err := rawList(e)
	if err != nil || !isList || len(parts) < 2 || len(parts) > 4 {
		return WorkUnitInput{}, false
	}
	key, ok := rawString(parts[0])
	if !ok {
		return WorkUnitInput{}, false
	}
	u := WorkUnitInput{Key: key, Data: Data(parts[1])}
	if len(parts) >= 3 {
		if err := ParseUnitMeta(Data(parts[2]), &u); err != nil {
			return WorkUnitInput{}, false
		}
	}
	if len(parts) == 4 && !isNull(parts[3]) {
		p, ok := rawNumber(parts[3])
		if !ok || math.IsNaN(p) {
			return WorkUnitInput{}, false
		}
		u.Priority = &p
	}
	return u, true
}
