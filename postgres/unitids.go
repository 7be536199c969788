package postgres

import "sync"

// unitIDs remembers the row ids of the units this daemon leased, so the
// fast finish path (finish.go) reaches a unit through the primary key
// instead of looking up its spec by name and its row by (spec, key) first:
// at a million queued units that lookup was a fifth of a finish's work.
//
// An id names one unit for good (ids are never reused, and no statement
// changes a unit's spec or key), so a remembered id is never wrong about
// which unit it is; at worst the unit is gone or no longer pending, the
// fast path does not match it and the general path, which looks the unit
// up by name, decides as it would have. Units finished through another
// daemon leave their entries behind; the map is emptied whenever it
// reaches maxUnitIDs, which bounds its memory.
type unitIDs struct {
	mu  sync.Mutex
	ids map[unitKey]int64
}

// maxUnitIDs bounds how many leased units' ids a backend remembers
// (roughly 100 bytes each).
const maxUnitIDs = 1 << 18

// put remembers ids[i] as the row id of keys[i].
func (c *unitIDs) put(keys []unitKey, ids []int64) {
	if len(keys) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil || len(c.ids)+len(keys) > maxUnitIDs {
		c.ids = make(map[unitKey]int64, min(maxUnitIDs, 4*len(keys)))
	}
	for i, k := range keys {
		c.ids[k] = ids[i]
	}
}

// take returns and forgets the remembered ids of keys: ids[i] is 0 when
// keys[i] has none.
func (c *unitIDs) take(keys []unitKey) []int64 {
	ids := make([]int64, len(keys))
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, k := range keys {
		if id, ok := c.ids[k]; ok {
			ids[i] = id
			delete(c.ids, k)
		}
	}
	return ids
}

// len is how many ids are remembered (tests).
func (c *unitIDs) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ids)
}
