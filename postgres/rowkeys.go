package postgres

import _ "embed"

// rowKeys collects units by their primary key (spec_id, key) as the two
// arrays statements unnest:
//
//	unnest($1::bigint[], $2::bytea[]) AS r (spec_id, key)
type rowKeys struct {
	specs []int64
	keys  [][]byte
}

func (r *rowKeys) add(spec int64, key []byte) {
	if key == nil {
		key = []byte{} // an empty key, not NULL
	}
	r.specs = append(r.specs, spec)
	r.keys = append(r.keys, key)
}

func (r *rowKeys) len() int { return len(r.specs) }

// unlistSQL drops the units $1/$2 (rowKeys) from their workers'
// outstanding sets.
//
//go:embed queries/unlist.sql
var unlistSQL string
