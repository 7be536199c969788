package coordinate

import (
	"fmt"
	"math"
	"time"
)

// ParseUnitMeta reads an add_work_units item's meta map (CBOR, may be null
// or absent) into in: `priority` (number), `delay` (seconds, number),
// `depends_on` (list of [spec, key] pairs, strings as bytes or text, lists
// possibly tag-128 tuples) and `group` (string). Null values and unknown
// keys are ignored. Errors wrap ErrInvalidWorkUnit and name the key.
func ParseUnitMeta(meta Data, in *WorkUnitInput) error {
	if isNull(meta) {
		return nil
	}
	pairs, isMap, err := rawMap(meta)
	if err != nil {
		return fmt.Errorf("%w: meta is not valid CBOR: %v", ErrInvalidWorkUnit, err)
	}
	if !isMap {
		return fmt.Errorf("%w: meta must be a map or null, got %s", ErrInvalidWorkUnit, describe(meta))
	}
	keys := stringKeyed(pairs)

	if v, ok := keys["priority"]; ok && !isNull(v) {
		p, ok := PyFloat(v) // a numeric string too (docs/compat.md)
		if !ok || math.IsNaN(p) {
			return fmt.Errorf("%w: meta \"priority\" must be a number, got %s", ErrInvalidWorkUnit, describe(v))
		}
		in.Priority = &p
	}
	if v, ok := keys["delay"]; ok && !isNull(v) {
		d, ok := rawNumber(v)
		if !ok || math.IsNaN(d) {
			return fmt.Errorf("%w: meta \"delay\" must be a number of seconds, got %s", ErrInvalidWorkUnit, describe(v))
		}
		in.Delay = secondsToDuration(d)
	}
	if v, ok := keys["depends_on"]; ok && !isNull(v) {
		deps, err := parseDependsOn(v)
		if err != nil {
			return err
		}
		in.DependsOn = deps
	}
	if v, ok := keys["group"]; ok && !isNull(v) {
		g, ok := rawString(v)
		if !ok {
			return fmt.Errorf("%w: meta \"group\" must be a string, got %s", ErrInvalidWorkUnit, describe(v))
		}
		in.Group = g.Bytes
	}
	return nil
}

func parseDependsOn(v []byte) ([]UnitRef, error) {
	elems, isList, err := rawList(v)
	if err != nil || !isList {
		return nil, fmt.Errorf("%w: meta \"depends_on\" must be a list of [spec, key] pairs, got %s", ErrInvalidWorkUnit, describe(v))
	}
	deps := make([]UnitRef, 0, len(elems))
	for i, e := range elems {
		pair, isList, err := rawList(e)
		if err != nil || !isList || len(pair) != 2 {
			return nil, fmt.Errorf("%w: meta \"depends_on\" item %d must be a [spec, key] pair, got %s", ErrInvalidWorkUnit, i, describe(e))
		}
		spec, ok1 := rawString(pair[0])
		key, ok2 := rawString(pair[1])
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: meta \"depends_on\" item %d must hold two strings, got %s", ErrInvalidWorkUnit, i, describe(e))
		}
		deps = append(deps, UnitRef{Spec: spec.Bytes, Key: key.Bytes})
	}
	return deps, nil
}

// secondsToDuration converts seconds to a Duration, saturating instead of
// overflowing; negative and NaN become 0.
func secondsToDuration(s float64) time.Duration {
	switch {
	case !(s > 0):
		return 0
	case s >= float64(math.MaxInt64)/float64(time.Second):
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}
