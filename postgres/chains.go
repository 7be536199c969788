package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// Chaining (SEMANTICS §10), set-based: a batch of finishes that chain
// runs one lookup of every target spec, then one add per target spec for
// the chain jobs that commute (units without dependencies or a delay,
// keys not named by another job of the set), instead of a lookup and an
// add per finish, each a round trip inside the batch's transaction. A job
// that does not commute with the set gathered so far ends that set (it is
// added first) and runs alone, so the result is that of running the jobs
// one by one in order. A merged add that fails with a cycle (it cannot,
// without dependencies, but the rule is that chaining never fails a
// finish) is redone job by job, so one job's error never drops another's
// units.

// specIDsSQL is from sql/specs.sql.
var specIDsSQL = namedSQL("spec_ids")

// chainTarget names the spec a chain job adds to.
type chainTarget struct {
	ns   int64
	name string
}

// chainSet is the commuting jobs gathered for one target spec.
type chainSet struct {
	target chainTarget
	id     int64
	jobs   []chainJob
	units  []coordinate.WorkUnitInput
	keys   map[string]bool
	now    time.Time
}

// runChains adds the units of chains (each job's deduplicated where it
// was made) inside tx, recording counts and
// group progress in d and g, and returns the units that became FAILED and
// those that stopped being FAILED.
func runChains(ctx context.Context, tx dbtx, chains []chainJob, d countDelta, g groupBumps) (failed, unfailed []unitKey, err error) {
	if len(chains) == 0 {
		return nil, nil, nil
	}
	ids, err := chainTargetIDs(ctx, tx, chains)
	if err != nil {
		return nil, nil, err
	}
	add := func(t chainTarget, id int64, units []coordinate.WorkUnitInput, now time.Time) error {
		f, u, err := addUnits(ctx, tx, t.ns, id, t.name, units, now, d, g)
		if err != nil {
			return err
		}
		failed = append(failed, f...)
		unfailed = append(unfailed, u...)
		return nil
	}
	alone := func(c chainJob, id int64) error {
		err := add(chainTarget{c.ns.id, c.from.then}, id, c.units, c.now)
		if errors.Is(err, coordinate.ErrCycle) {
			return nil // chaining never fails the finish; nothing was added
		}
		if err != nil {
			return fmt.Errorf("chaining to %q: %w", c.from.then, err)
		}
		return nil
	}
	var (
		sets  []*chainSet // in the order of their first job
		byTgt = map[chainTarget]*chainSet{}
	)
	flush := func() error {
		for _, s := range sets {
			err := add(s.target, s.id, s.units, s.now)
			if errors.Is(err, coordinate.ErrCycle) {
				for _, c := range s.jobs {
					if err := alone(c, s.id); err != nil {
						return err
					}
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("chaining to %q: %w", s.target.name, err)
			}
		}
		sets, byTgt = sets[:0], map[chainTarget]*chainSet{}
		return nil
	}
	for _, c := range chains {
		t := chainTarget{c.ns.id, c.from.then}
		id, ok := ids[t]
		if !ok {
			continue // `then` names a missing spec: chaining is skipped (SEMANTICS §10)
		}
		s := byTgt[t]
		if !commutes(c.units, s) {
			if err := flush(); err != nil {
				return nil, nil, err
			}
			if err := alone(c, id); err != nil {
				return nil, nil, err
			}
			continue
		}
		if s == nil {
			s = &chainSet{target: t, id: id, keys: map[string]bool{}}
			byTgt[t] = s
			sets = append(sets, s)
		}
		s.jobs = append(s.jobs, c)
		s.units = append(s.units, c.units...)
		for _, u := range c.units {
			s.keys[u.Key.Bytes] = true
		}
		if c.now.After(s.now) {
			s.now = c.now
		}
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	return failed, unfailed, nil
}

// commutes reports whether units may join set s (nil: none gathered yet
// for their target): no dependencies, no delay (a merged add has one
// time), and no key s already holds.
func commutes(units []coordinate.WorkUnitInput, s *chainSet) bool {
	for i := range units {
		u := &units[i]
		if len(u.DependsOn) > 0 || u.Delay > 0 || (s != nil && s.keys[u.Key.Bytes]) {
			return false
		}
	}
	return true
}

// chainTargetIDs looks up every target spec of chains in one statement.
func chainTargetIDs(ctx context.Context, tx dbtx, chains []chainJob) (map[chainTarget]int64, error) {
	seen := map[chainTarget]bool{}
	var (
		nss   []int64
		names [][]byte
	)
	for _, c := range chains {
		t := chainTarget{c.ns.id, c.from.then}
		if !seen[t] {
			seen[t] = true
			nss = append(nss, t.ns)
			names = append(names, []byte(t.name))
		}
	}
	rows, err := tx.Query(ctx, specIDsSQL, nss, names)
	if err != nil {
		return nil, err
	}
	ids := make(map[chainTarget]int64, len(nss))
	var (
		ns   int64
		name []byte
		id   int64
	)
	_, err = pgx.ForEachRow(rows, []any{&ns, &name, &id}, func() error {
		ids[chainTarget{ns, string(name)}] = id
		return nil
	})
	return ids, err
}
