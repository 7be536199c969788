package postgres

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Spec rows the scheduler's read decoded, kept across reads. Every
// get_work's read (candidates.sql) returns each spec of the namespace it
// could choose, with its counts; with 100 specs, decoding their settings
// (names, definitions, then, runtime, the task derived from them) was
// most of what the daemon spent on a read, on the claims transaction's
// critical path (docs/postgres.md, "Fifth pass: the 100-spec read"). The
// read also returns each row's version (its xmin: every UPDATE of a
// work_spec row, by spec_set, control_work_spec or the continuous gate,
// writes a new version with the xid of the (sub)transaction that made
// it, so a committed version of a row never has the xmin of an earlier
// committed one), and a row whose id and version are known is not
// decoded again: the counts and the best unit's priority, which change
// with every claim, are read from each row as before. So the scheduler
// sees exactly what a full decode would give.
//
// Nor are the settings of such a row sent (docs/postgres.md, "Sixth pass:
// the weighted read in the daemon"): each read returns its horizon, the
// xmin of its snapshot (every version with an older xid was committed
// before the read, so the read saw it), and the next read with the same
// spec filter sends the settings only of versions not older than it. A
// row sent without them whose version the daemon does not know (one the
// earlier read did not return, or one dropped with the map) is a miss:
// the caller reads again with every row's settings (readAll).

// specRows is one namespace's decoded spec rows by id. The zero value is
// ready.
type specRows struct {
	mu sync.Mutex
	// rows is replaced, never changed: a reader may keep it without the
	// lock.
	rows map[int64]versionedSpec
	// horizons are, by spec filter (readKey's), the horizon of the last
	// read whose rows were all known once read; reads with the filter
	// send settings only for versions not older.
	horizons map[string]uint32
	// capped names the specs whose row, as last decoded, has a
	// max_running (workready.go); nil when none has. Replaced, never
	// changed, so capped reads it without the lock.
	capped atomic.Pointer[map[string]bool]

	// For tests: rows decoded, rows sent with their settings, reads that
	// missed.
	decoded, sent, missed atomic.Int64
}

// versionedSpec is a decoded row at its version. The row is never
// changed once kept: candidates share it.
type versionedSpec struct {
	version uint32
	row     *specRow
}

// maxSpecRows bounds specRows: past it the map starts again (rows of
// deleted specs would otherwise stay as long as the daemon runs), and so
// do the horizons, whose reads' rows it no longer holds.
const maxSpecRows = 10000

// readAll is the horizon that has a read send every row's settings.
var readAll = pgtype.Uint32{}

// horizon is what a read with filter passes as candidates.sql's $5.
func (s *specRows) horizon(filter string) pgtype.Uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.horizons[filter]
	return pgtype.Uint32{Uint32: h, Valid: ok}
}

// read records a read with filter whose rows are all known now: the rows
// it decoded at their versions, and, when it had no miss, its horizon.
func (s *specRows) read(filter string, decoded []versionedSpec, horizon pgtype.Uint32, missed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(decoded) > 0 {
		// A new map, so that collectCandidates reads the one it took
		// without the lock.
		rows := make(map[int64]versionedSpec, len(s.rows)+len(decoded))
		if len(s.rows)+len(decoded) <= maxSpecRows {
			maps.Copy(rows, s.rows)
		} else {
			s.horizons = nil
			missed = true // rows the read knew are gone
		}
		for _, v := range decoded {
			rows[v.row.id] = v
		}
		s.rows = rows
	}
	if !missed && horizon.Valid && len(s.horizons) < maxSpecRows {
		if s.horizons == nil {
			s.horizons = map[string]uint32{}
		}
		s.horizons[filter] = horizon.Uint32
	}
	s.decoded.Add(int64(len(decoded)))
	if len(decoded) == 0 {
		return
	}
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

// specRecord is the scan target of candidates.sql's record of a row's
// settings: its fields go to specColumns (specs.go) in spec_cols' order.
type specRecord struct {
	cols specColumns
	dest []any
	null bool
}

// ScanNull and ScanIndex make specRecord a pgtype.CompositeIndexScanner.
func (r *specRecord) ScanNull() error {
	r.null = true
	return nil
}

func (r *specRecord) ScanIndex(i int) any {
	if r.dest == nil {
		r.dest = r.cols.dest()
	}
	r.null = false
	return r.dest[i]
}

// collectCandidates reads candidates.sql's rows for filter, decoding the
// settings only of rows not in known at their version, and reports a
// miss: a row sent without its settings at a version known does not
// have (the candidates are then incomplete: read again with readAll). A
// lone spec with available units that was not probed gets priority 0:
// there is nothing to compare, and its claim finds out whether they are
// all delayed.
func collectCandidates(rows pgx.Rows, known *specRows, filter string) (cands []candidate, missed bool, err error) {
	var (
		decoded []versionedSpec
		horizon pgtype.Uint32
		rec     specRecord
		version uint32
		best    pgtype.Float8
		probed  bool
	)
	known.mu.Lock()
	have := known.rows // replaced, never changed (read)
	known.mu.Unlock()
	for rows.Next() {
		var (
			c  candidate
			id int64
		)
		rec.null = true
		if err := rows.Scan(&id, &version, &c.available, &c.pending, &best, &probed, &c.chooseable, &horizon, &rec); err != nil {
			return nil, false, err
		}
		if v, ok := have[id]; ok && v.version == version {
			c.row = v.row
		} else if !rec.null {
			row := rec.cols.row()
			c.row = &row
			decoded = append(decoded, versionedSpec{version: version, row: c.row})
		} else {
			missed = true
		}
		if !rec.null {
			known.sent.Add(1)
		}
		c.best, c.hasBest = best.Float64, best.Valid
		if c.available > 0 && !probed {
			c.best, c.hasBest = 0, true
		}
		cands = append(cands, c)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	known.read(filter, decoded, horizon, missed)
	if missed {
		known.missed.Add(1)
		return nil, true, nil
	}
	return cands, false, nil
}
