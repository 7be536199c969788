package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// importBatch is how many units one INSERT of ImportWorkSpec writes.
const importBatch = 10000

// ImportWorkSpec creates a spec and its units exactly as given
// (coordinate.ImportedWorkSpec), in one transaction.
func (ns *namespace) ImportWorkSpec(ctx context.Context, in *coordinate.ImportedWorkSpec) error {
	name, meta, err := coordinate.ResolveImport(in)
	if err != nil {
		return err
	}
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
	d := countDelta{}
	var id int64
	err = ns.b.inTx(ctx, func(tx pgx.Tx) error {
		clear(d)
		err := tx.QueryRow(ctx, `INSERT INTO work_spec (namespace_id, name, name_text, definition,
				priority, weight, paused, continuous, can_be_continuous, interval_ns, next_continuous,
				max_running, max_getwork, max_retries, min_gb, then_name, then_preempts, runtime)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			ON CONFLICT (namespace_id, name) DO NOTHING RETURNING id`,
			ns.id, bytesOf(name.Bytes), name.Text, []byte(in.Definition),
			meta.Priority, meta.Weight, meta.Paused, meta.Continuous, meta.CanBeContinuous,
			int64(meta.Interval), nsOf(meta.NextContinuous), meta.MaxRunning, meta.MaxGetwork,
			meta.MaxRetries, meta.MinGB, bytesOf(meta.Then), meta.ThenPreempts, bytesOf(meta.Runtime)).Scan(&id)
		if errNotFound(err) {
			return fmt.Errorf("%w %q", coordinate.ErrWorkSpecExists, name.Bytes)
		}
		if err != nil {
			return fmt.Errorf("postgres import work spec %q: %w", name.Bytes, err)
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
		// In statements of importBatch units, so no array parameter
		// grows without bound.
		for lo := 0; lo < n; lo += importBatch {
			hi := min(n, lo+importBatch)
			_, err = tx.Exec(ctx, `INSERT INTO work_unit (spec_id, key, key_text, data, status, priority,
					expires, worker, worker_text, lease_id, attempts)
				SELECT $1, k, t, d, s, p, e, w, wt, CASE WHEN s = 3 THEN nextval('lease_id_seq') END, a
				FROM unnest($2::bytea[], $3::boolean[], $4::bytea[], $5::smallint[], $6::float8[],
					$7::bigint[], $8::bytea[], $9::boolean[], $10::integer[]) AS i (k, t, d, s, p, e, w, wt, a)`,
				id, keys[lo:hi], keyTexts[lo:hi], datas[lo:hi], statuses[lo:hi], prios[lo:hi],
				expires[lo:hi], workers[lo:hi], workerTexts[lo:hi], attempts[lo:hi])
			if err != nil {
				return fmt.Errorf("postgres import work spec %q: units: %w", name.Bytes, err)
			}
		}
		for _, st := range []coordinate.Status{coordinate.StatusFinished, coordinate.StatusFailed} {
			if c := in.Archived[st]; c > 0 {
				if _, err := tx.Exec(ctx, "INSERT INTO archived_count (spec_id, status, n) VALUES ($1, $2, $3)", id, int16(st), c); err != nil {
					return fmt.Errorf("postgres import work spec %q: archived counts: %w", name.Bytes, err)
				}
			}
		}
		return d.apply(ctx, tx)
	})
	if err == nil && n > 0 {
		ns.b.noteAdded(n)
		ns.b.warmAfterAdds(id, n)
	}
	return err
}
