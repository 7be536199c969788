package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/import.sql.
var (
	importSpecSQL     = namedSQL("import_spec")
	importUnitsSQL    = namedSQL("import_units")
	importArchivedSQL = namedSQL("import_archived")
)

// importBatch is how many units one INSERT of ImportWorkSpec writes.
const importBatch = 10000

// ImportWorkSpec creates a spec and its units exactly as given
// (coordinate.ImportedWorkSpec), in one transaction.
func (ns *namespace) ImportWorkSpec(ctx context.Context, in *coordinate.ImportedWorkSpec) error {
	return ns.ImportWorkSpecs(ctx, []*coordinate.ImportedWorkSpec{in}, false)
}

// ImportWorkSpecs creates every spec of specs with its units in one
// transaction (coordinate.BulkImporter): an import the process does not
// finish leaves nothing behind, so the next start can tell it never
// happened and do it again. With replace, the existing specs of those
// names are deleted in that transaction first (deleteSpec, as
// DeleteWorkSpec), so a failed import leaves them as they were.
func (ns *namespace) ImportWorkSpecs(ctx context.Context, specs []*coordinate.ImportedWorkSpec, replace bool) error {
	names := make([]coordinate.Name, len(specs))
	metas := make([]coordinate.WorkSpecMeta, len(specs))
	for i, in := range specs {
		var err error
		if names[i], metas[i], err = coordinate.ResolveImport(in); err != nil {
			return err
		}
	}
	ids := make([]int64, len(specs))
	err := ns.b.inTxCounted(ctx, func(tx pgx.Tx, d countDelta) error {
		g := groupBumps{}
		if replace {
			for _, name := range names {
				err := ns.deleteSpec(ctx, tx, d, g, name.Bytes)
				if err != nil && !errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
					return fmt.Errorf("replacing: %w", err)
				}
			}
		}
		for i, in := range specs {
			id, err := ns.importSpec(ctx, tx, d, in, names[i], &metas[i])
			if err != nil {
				return err
			}
			ids[i] = id
		}
		if err := d.apply(ctx, tx); err != nil {
			return err
		}
		return g.apply(ctx, tx)
	})
	if err == nil {
		for i, in := range specs {
			if n := len(in.Units); n > 0 {
				ns.b.cache.added(ids[i], n)
			}
		}
	}
	return err
}

// importSpec writes one imported spec, whose name and settings
// coordinate.ResolveImport gave, and its units in tx, counting them in d,
// and returns the spec's id.
func (ns *namespace) importSpec(ctx context.Context, tx pgx.Tx, d countDelta, in *coordinate.ImportedWorkSpec, name coordinate.Name, meta *coordinate.WorkSpecMeta) (int64, error) {
	n := len(in.Units)
	var (
		keys, datas, workers [][]byte
		keyTexts             = make([]bool, n)
		workerTexts          = make([]*bool, n)
		statuses             = make([]int16, n)
		prios                = make([]float64, n)
		expires              = make([]*int64, n)
		attempts             = make([]int32, n)
	)
	keys, datas, workers = make([][]byte, n), make([][]byte, n), make([][]byte, n)
	now := ns.now().UnixNano() // AVAILABLE units are so since the import
	var id int64
	err := tx.QueryRow(ctx, importSpecSQL,
		ns.id, bytesOf(name.Bytes), name.Text, []byte(in.Definition),
		meta.Priority, meta.Weight, meta.Paused, meta.Continuous, meta.CanBeContinuous,
		int64(meta.Interval), nsOf(meta.NextContinuous), meta.MaxRunning, meta.MaxGetwork,
		meta.MaxRetries, meta.MinGB, bytesOf(meta.Then), meta.ThenPreempts, bytesOf(meta.Runtime)).Scan(&id)
	if errNotFound(err) {
		return 0, fmt.Errorf("%w %q", coordinate.ErrWorkSpecExists, name.Bytes)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres import work spec %q: %w", name.Bytes, err)
	}
	for i := range in.Units {
		u := &in.Units[i]
		keys[i], keyTexts[i] = bytesOf(u.Key.Bytes), u.Key.Text
		datas[i] = u.Data
		if len(datas[i]) == 0 {
			datas[i] = coordinate.Null
		}
		statuses[i], prios[i], expires[i] = int16(u.Status), u.Priority, nsOf(u.Expiration)
		workers[i], workerTexts[i] = nameCols(u.Worker)
		attempts[i] = 0
		if u.Worker != nil {
			attempts[i] = 1
		}
		d.move(id, 0, u.Status)
	}
	// In statements of importBatch units, so no array parameter grows
	// without bound.
	for lo := 0; lo < n; lo += importBatch {
		hi := min(n, lo+importBatch)
		_, err = tx.Exec(ctx, importUnitsSQL,
			id, keys[lo:hi], keyTexts[lo:hi], datas[lo:hi], statuses[lo:hi], prios[lo:hi],
			expires[lo:hi], workers[lo:hi], workerTexts[lo:hi], attempts[lo:hi], now)
		if err != nil {
			return 0, fmt.Errorf("postgres import work spec %q: units: %w", name.Bytes, err)
		}
	}
	for _, st := range []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed} {
		if c := in.Archived[st]; c > 0 {
			if _, err := tx.Exec(ctx, importArchivedSQL, id, int16(st), c); err != nil {
				return 0, fmt.Errorf("postgres import work spec %q: archived counts: %w", name.Bytes, err)
			}
		}
	}
	return id, nil
}
