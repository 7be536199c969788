package jobserver

import (
	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
)

// Limits are quotas on what one call may store or ask for, so that one
// careless or hostile client cannot exhaust the daemon's memory cheaply
// (docs/limits.md). The defaults are far above what any sane client sends.
type Limits struct {
	// MaxUnitData is the largest data, in encoded bytes, of one work unit
	// (add_work_units, update_work_unit). 0 means DefaultMaxUnitData.
	MaxUnitData int64
	// MaxLockKeys is the most lock paths one lock-service call may name.
	// 0 means DefaultMaxLockKeys.
	MaxLockKeys int
	// MaxReplyBytes bounds the unit data one get_work_units or get_work
	// reply carries: past it the reply stops adding units, as `limit`
	// (max_jobs) does by count; get_work leases no more than it sends. 0
	// means DefaultMaxReplyBytes.
	MaxReplyBytes int64
}

// Default quotas.
const (
	DefaultMaxUnitData   = 64 << 20
	DefaultMaxLockKeys   = 100_000
	DefaultMaxReplyBytes = 64 << 20
)

// withDefaults fills zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxUnitData <= 0 {
		l.MaxUnitData = DefaultMaxUnitData
	}
	if l.MaxLockKeys <= 0 {
		l.MaxLockKeys = DefaultMaxLockKeys
	}
	if l.MaxReplyBytes <= 0 {
		l.MaxReplyBytes = DefaultMaxReplyBytes
	}
	return l
}

// checkUnitData refuses a unit's data over the quota.
func (l Limits) checkUnitData(data []byte, what func() string) error {
	if int64(len(data)) > l.MaxUnitData {
		return valueError("%s: data of %d bytes exceeds the limit of %d bytes per work unit", what(), len(data), l.MaxUnitData)
	}
	return nil
}

// checkLockKeys refuses a lock-service call whose `keys` parameter names
// more paths than the quota, before any of them is decoded.
func (l Limits) checkLockKeys(sig signature, params []cbor.RawMessage) error {
	for i, name := range sig.names {
		if name != "keys" || i >= len(params) {
			continue
		}
		raw, _ := cborx.Untuple(params[i])
		h, err := cborx.ReadHead(raw)
		if err != nil || h.Major != cborx.MajorArray {
			return nil // the method's own decoder reports it
		}
		n := h.Arg
		if h.Indefinite() {
			elems, _ := cborx.List(nil, raw)
			n = uint64(len(elems))
		}
		if n > uint64(l.MaxLockKeys) {
			return valueError("keys: %d lock paths exceed the limit of %d per call", n, l.MaxLockKeys)
		}
	}
	return nil
}

// replyBudget counts the unit data a reply carries.
type replyBudget struct {
	max, used int64
}

// take reports whether a unit with data of n bytes still fits
// (coordinate.WithinBytes); the first unit always does, so a client
// paging by `start` always makes progress.
func (b *replyBudget) take(n int, first bool) bool {
	if !coordinate.WithinBytes(b.used, int64(n), b.max, first) {
		return false
	}
	b.used += int64(n)
	return true
}
