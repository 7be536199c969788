package coordinate

import (
	"context"
	"encoding/binary"
	"time"
)

// The lock service (PROTOCOL §8.25): an owner locks paths (lists of
// labels) until a deadline. A path cannot be locked while it, one of its
// prefixes or one of its extensions is locked, by anyone. Locks live in
// the backend, so every daemon sharing one backend (several daemons on one
// PostgreSQL database) sees the same locks. A memory backend keeps them in
// memory only: they are lost when the daemon stops, as they always were.

// Locker is the lock service of a namespace. Every method first drops the
// locks whose deadline is before now.
type Locker interface {
	// LockPaths locks paths for owner until now+ttl, in order. With all,
	// it locks every path or none: refused is the index of the first path
	// that could not be locked (then nothing was locked), or -1. Without
	// all, it locks the paths that are free and refused is -1. locked[i]
	// reports whether paths[i] was locked by this call.
	LockPaths(ctx context.Context, owner Name, ttl time.Duration, paths []LockPath, all bool) (locked []bool, refused int, err error)
	// RenewLocks resets the deadline of every path to now+ttl, provided
	// owner holds all of them; else it changes nothing and reports the
	// first path that owner does not hold and its holder (nil: nobody).
	// refused is -1 when every path was renewed.
	RenewLocks(ctx context.Context, owner Name, ttl time.Duration, paths []LockPath) (refused int, holder *Name, err error)
	// UnlockPaths unlocks every path, provided owner holds all of them;
	// else it changes nothing and reports as RenewLocks does.
	UnlockPaths(ctx context.Context, owner Name, paths []LockPath) (refused int, holder *Name, err error)
	// ReadLocks reports each path's holder, nil when it is not locked.
	ReadLocks(ctx context.Context, paths []LockPath) ([]*Name, error)
	// DropLocks unlocks path and every extension of it, whoever holds them.
	DropLocks(ctx context.Context, path LockPath) error
}

// LockPath is one lock path, by its labels' identity keys: Key is the
// keys, each preceded by its length as a uvarint, so one path is a prefix
// of another exactly when its Key is a byte prefix of the other's.
type LockPath struct {
	Key string
}

// NewLockPath makes the path of labels given by their identity keys (the
// RPC layer decides when two labels are the same).
func NewLockPath(labelKeys ...string) LockPath {
	var key []byte
	for _, l := range labelKeys {
		key = binary.AppendUvarint(key, uint64(len(l)))
		key = append(key, l...)
	}
	return LockPath{Key: string(key)}
}

// Prefixes lists the keys of the path's prefixes, shortest (the empty
// path, "") first and the path itself last.
func (p LockPath) Prefixes() []string {
	out := []string{""}
	for i := 0; i < len(p.Key); {
		n, w := binary.Uvarint([]byte(p.Key[i:]))
		if w <= 0 || uint64(len(p.Key)-i-w) < n {
			break // not made by NewLockPath: the rest is one opaque label
		}
		i += w + int(n)
		out = append(out, p.Key[:i])
	}
	if out[len(out)-1] != p.Key {
		out = append(out, p.Key)
	}
	return out
}

// Conflicts reports whether p and q cannot both be locked: one is a prefix
// of the other (or they are the same path).
func (p LockPath) Conflicts(q LockPath) bool {
	a, b := p.Key, q.Key
	if len(a) > len(b) {
		a, b = b, a
	}
	return b[:len(a)] == a
}

// ExtensionBound is the smallest key above every extension of p, for range
// scans over keys in byte order; ok is false when there is none (every
// byte of p's key is 0xff, or the key is empty).
func (p LockPath) ExtensionBound() (bound string, ok bool) {
	k := []byte(p.Key)
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] != 0xff {
			k[i]++
			return string(k[:i+1]), true
		}
	}
	return "", false
}
