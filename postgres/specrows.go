package postgres

import (
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Spec rows the scheduler's read decoded, kept across reads. Every
// get_work's read (candidates.sql) returns each spec of the namespace it
// could choose, with its settings; with 100 specs, decoding those rows
// (names, definitions, then, runtime, the task derived from them) was
// most of what the daemon spent on a read, on the claims transaction's
// critical path (docs/postgres.md, "Fifth pass: the 100-spec read"). The
// read also returns each row's version (its xmin: every UPDATE of a
// work_spec row, by spec_set, control_work_spec or the continuous gate,
// writes a new version with the xid of the (sub)transaction that made
// it, so a committed version of a row never has the xmin of an earlier
// committed one), and
// a row whose id and version are known is not decoded again: the counts
// and the best unit's priority, which change with every claim, are read
// from each row as before. So the scheduler sees exactly what a full
// decode would give.

// specRows is one namespace's decoded spec rows by id. The zero value is
// ready.
type specRows struct {
	mu   sync.Mutex
	rows map[int64]versionedSpec
	// capped names the specs whose row, as last decoded, has a
	// max_running (workready.go); nil when none has. Replaced, never
	// changed, so capped reads it without the lock.
	capped atomic.Pointer[map[string]bool]

	decoded atomic.Int64 // rows decoded, for tests
}

type versionedSpec struct {
	version uint32
	row     specRow
}

// maxSpecRows bounds specRows: past it the map starts again (rows of
// deleted specs would otherwise stay as long as the daemon runs).
const maxSpecRows = 10000

// lookup is the row of spec id at version, if it was decoded before.
func (s *specRows) lookup(id int64, version uint32) (specRow, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.rows[id]
	if !ok || v.version != version {
		return specRow{}, false
	}
	return v.row, true
}

// keep records rows decoded at their versions.
func (s *specRows) keep(decoded []versionedSpec) {
	if len(decoded) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil || len(s.rows)+len(decoded) > maxSpecRows {
		s.rows = make(map[int64]versionedSpec, len(decoded))
	}
	for _, v := range decoded {
		s.rows[v.row.id] = v
	}
	s.decoded.Add(int64(len(decoded)))
	var capped map[string]bool
	for _, v := range s.rows {
		if v.row.spec.Meta.MaxRunning != 0 {
			if capped == nil {
				capped = map[string]bool{}
			}
			capped[v.row.spec.Name.Bytes] = true
		}
	}
	if capped == nil {
		s.capped.Store(nil)
	} else {
		s.capped.Store(&capped)
	}
}

// isCapped reports whether spec, as the scheduler's reads last decoded
// it, has a max_running.
func (s *specRows) isCapped(spec string) bool {
	m := s.capped.Load()
	return m != nil && (*m)[spec]
}

// collectCandidates reads candidates.sql's rows, decoding the spec
// columns only of rows not in known at their version. A lone spec with
// available units that was not probed gets priority 0: there is nothing
// to compare, and its claim finds out whether they are all delayed.
func collectCandidates(rows pgx.Rows, known *specRows) ([]candidate, error) {
	var (
		cands   []candidate
		decoded []versionedSpec
		skip    []any // the spec columns, skipped, then the rest
	)
	for rows.Next() {
		var (
			c         candidate
			probed    bool
			version   uint32
			knownBest *float64 // in c.best already (candidates.sql)
		)
		if skip == nil {
			n := len(rows.FieldDescriptions())
			skip = make([]any, n)
		}
		// The id, the counts, the version, the known best priority, the
		// best priority and whether it was wanted; nil skips a column.
		skip[0] = &c.row.id
		tail := skip[len(skip)-6:]
		tail[0], tail[1], tail[2], tail[3], tail[4], tail[5] = &c.available, &c.pending, &version, &knownBest, &c.best, &probed
		if err := rows.Scan(skip...); err != nil {
			return nil, err
		}
		row, ok := known.lookup(c.row.id, version)
		if !ok {
			var err error
			row, err = scanSpecWith(rows, &c.available, &c.pending, &version, &knownBest, &c.best, &probed)
			if err != nil {
				return nil, err
			}
			decoded = append(decoded, versionedSpec{version: version, row: row})
		}
		c.row = row
		if c.available > 0 && !probed {
			var zero float64
			c.best = &zero
		}
		cands = append(cands, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	known.keep(decoded)
	return cands, nil
}
