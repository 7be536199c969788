package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// The statements, from sql/locks.sql.
var (
	locksExpireSQL    = namedSQL("locks_expire")
	lockIfFreeSQL     = namedSQL("lock_if_free")
	locksReadSQL      = namedSQL("locks_read")
	locksRenewSQL     = namedSQL("locks_renew")
	locksUnlockSQL    = namedSQL("locks_unlock")
	locksDropUnderSQL = namedSQL("locks_drop_under")
)

// The lock service (coordinate.Locker) in the lock_path table (migration
// 0007), so every daemon on the database sees the same locks. Each call is
// one transaction that first takes the namespace's lock-service advisory
// lock: calls are few and short, and serialising them is what makes
// "free, so lock it" exact across daemons.

// lockServiceClass is the first key of the per-namespace advisory lock
// (maxRunningLockClass's key space, another class).
const lockServiceClass = 0x6c6f636b // "lock"

// errLockRefused rolls back a lock call that locks all or nothing.
var errLockRefused = errors.New("lock refused")

// lockTx runs fn in a transaction holding the namespace's lock-service
// lock, after dropping expired locks.
func (ns *namespace) lockTx(ctx context.Context, what string, fn func(tx pgx.Tx, now time.Time) error) error {
	now := ns.now()
	err := ns.b.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, advisoryLockSQL, lockServiceClass, int32(ns.id)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, locksExpireSQL, ns.id, now.UnixNano()); err != nil {
			return err
		}
		return fn(tx, now)
	})
	if err != nil && !errors.Is(err, errLockRefused) {
		return fmt.Errorf("postgres %s: %w", what, err)
	}
	return err
}

func (ns *namespace) LockPaths(ctx context.Context, owner coordinate.Name, ttl time.Duration, paths []coordinate.LockPath, all bool) (locked []bool, refused int, err error) {
	err = ns.lockTx(ctx, "lock", func(tx pgx.Tx, now time.Time) error {
		locked, refused = make([]bool, len(paths)), -1
		b := &pgx.Batch{}
		for _, p := range paths {
			var bound []byte
			if k, ok := p.ExtensionBound(); ok {
				bound = []byte(k)
			}
			prefixes := p.Prefixes()
			keys := make([][]byte, len(prefixes))
			for i, k := range prefixes {
				keys[i] = []byte(k)
			}
			b.Queue(lockIfFreeSQL, ns.id, []byte(p.Key), keys, bound, bytesOf(owner.Bytes), owner.Text, now.Add(ttl).UnixNano())
		}
		br := tx.SendBatch(ctx, b)
		for i := range paths {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			locked[i] = tag.RowsAffected() == 1
			if !locked[i] && all && refused < 0 {
				refused = i
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		if refused >= 0 {
			clear(locked)
			return errLockRefused
		}
		return nil
	})
	if errors.Is(err, errLockRefused) {
		err = nil
	}
	return locked, refused, err
}

// heldBy returns the index of the first path owner does not hold and its
// holder (nil: nobody), or -1.
func heldBy(ctx context.Context, tx pgx.Tx, nsID int64, owner coordinate.Name, paths []coordinate.LockPath) (int, *coordinate.Name, error) {
	holders, err := readLocks(ctx, tx, nsID, paths)
	if err != nil {
		return 0, nil, err
	}
	for i, h := range holders {
		if h == nil || h.Bytes != owner.Bytes {
			return i, h, nil
		}
	}
	return -1, nil, nil
}

func readLocks(ctx context.Context, tx pgx.Tx, nsID int64, paths []coordinate.LockPath) ([]*coordinate.Name, error) {
	rows, err := tx.Query(ctx, locksReadSQL, nsID, lockKeys(paths))
	if err != nil {
		return nil, err
	}
	out := make([]*coordinate.Name, 0, len(paths))
	var owner []byte
	var text *bool
	_, err = pgx.ForEachRow(rows, []any{&owner, &text}, func() error {
		out = append(out, nameOf(owner, text))
		return nil
	})
	return out, err
}

func (ns *namespace) RenewLocks(ctx context.Context, owner coordinate.Name, ttl time.Duration, paths []coordinate.LockPath) (refused int, holder *coordinate.Name, err error) {
	err = ns.lockTx(ctx, "renew", func(tx pgx.Tx, now time.Time) error {
		if refused, holder, err = heldBy(ctx, tx, ns.id, owner, paths); err != nil || refused >= 0 {
			return err
		}
		_, err := tx.Exec(ctx, locksRenewSQL,
			ns.id, lockKeys(paths), now.Add(ttl).UnixNano())
		return err
	})
	return refused, holder, err
}

func (ns *namespace) UnlockPaths(ctx context.Context, owner coordinate.Name, paths []coordinate.LockPath) (refused int, holder *coordinate.Name, err error) {
	err = ns.lockTx(ctx, "unlock", func(tx pgx.Tx, _ time.Time) error {
		if refused, holder, err = heldBy(ctx, tx, ns.id, owner, paths); err != nil || refused >= 0 {
			return err
		}
		_, err := tx.Exec(ctx, locksUnlockSQL, ns.id, lockKeys(paths))
		return err
	})
	return refused, holder, err
}

func (ns *namespace) ReadLocks(ctx context.Context, paths []coordinate.LockPath) (holders []*coordinate.Name, err error) {
	err = ns.lockTx(ctx, "readlock", func(tx pgx.Tx, _ time.Time) error {
		holders, err = readLocks(ctx, tx, ns.id, paths)
		return err
	})
	return holders, err
}

func (ns *namespace) DropLocks(ctx context.Context, path coordinate.LockPath) error {
	var bound []byte
	if k, ok := path.ExtensionBound(); ok {
		bound = []byte(k)
	}
	return ns.lockTx(ctx, "delete_namespace", func(tx pgx.Tx, _ time.Time) error {
		_, err := tx.Exec(ctx, locksDropUnderSQL,
			ns.id, []byte(path.Key), bound)
		return err
	})
}

// lockKeys lists the paths' keys.
func lockKeys(paths []coordinate.LockPath) [][]byte {
	keys := make([][]byte, len(paths))
	for i, p := range paths {
		keys[i] = []byte(p.Key)
	}
	return keys
}
