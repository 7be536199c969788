package jobserver

import (
	"context"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/pyvalue"
)

// The hierarchical lock service (PROTOCOL §8.25), an extension the Go
// daemon offered. This file decodes the calls and words the answers; the
// locks themselves live in the backend (coordinate.Locker), so every
// daemon sharing a backend shares them. A lock key is a path (a list of
// labels); a path cannot be locked while it, one of its prefixes or one
// of its extensions is locked.

// Lock timeouts in seconds: 0 (or less) means the default, larger values
// are capped.
const (
	defaultLockTimeout = 60
	maxLockTimeout     = 1_000_000
)

// canonicalEnc encodes non-string labels canonically so equal values get
// equal keys.
var canonicalEnc = mustCanonicalEnc()

func mustCanonicalEnc() cbor.EncMode {
	em, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return em
}

// lockPath is one decoded path.
type lockPath struct {
	raw  cbor.RawMessage // as sent, for locksome's result
	repr string          // Python repr, for messages
	path coordinate.LockPath
}

// decodeLockPaths decodes a `keys` parameter: a list or tuple of paths,
// each a list or tuple of labels.
func decodeLockPaths(raw cbor.RawMessage) ([]*lockPath, error) {
	items, err := decodeList(raw, "keys")
	if err != nil {
		return nil, err
	}
	paths := make([]*lockPath, len(items))
	for i, it := range items {
		if paths[i], err = decodeLockPath(it, fmt.Sprintf("keys[%d]", i)); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

func decodeLockPath(raw cbor.RawMessage, what string) (*lockPath, error) {
	labels, err := decodeList(raw, what)
	if err != nil {
		return nil, err
	}
	var decoded any
	if err := decMode.Unmarshal(raw, &decoded); err != nil {
		return nil, typeError("%s: %v", what, err)
	}
	keys := make([]string, len(labels))
	for i, l := range labels {
		if keys[i], err = labelKey(l); err != nil {
			return nil, typeError("%s[%d]: %v", what, i, err)
		}
	}
	return &lockPath{raw: raw, repr: pyvalue.Repr(decoded), path: coordinate.NewLockPath(keys...)}, nil
}

// labelKey identifies a label: strings by their bytes whatever their kind
// (as Python 2 compared 'a' and u'a'), other values by canonical CBOR.
func labelKey(raw cbor.RawMessage) (string, error) {
	if n, err := decodeName(raw, "label"); err == nil {
		return "s" + n.Bytes, nil
	}
	var v any
	if err := decMode.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	enc, err := canonicalEnc.Marshal(v)
	if err != nil {
		return "", err
	}
	return "v" + string(enc), nil
}

// lockTimeout converts a timeout parameter to a lock lifetime.
func lockTimeout(raw cbor.RawMessage) (time.Duration, error) {
	sec, err := decodeNumber(raw, "timeout")
	if err != nil {
		return 0, err
	}
	if !(sec > 0) {
		sec = defaultLockTimeout
	}
	return secondsDuration(min(sec, maxLockTimeout)), nil
}

// lockArgs decodes (locker_id, timeout, keys).
func lockArgs(p []cbor.RawMessage) (coordinate.Name, time.Duration, []*lockPath, error) {
	owner, err := decodeName(p[0], "locker_id")
	if err != nil {
		return owner, 0, nil, err
	}
	timeout, err := lockTimeout(p[1])
	if err != nil {
		return owner, 0, nil, err
	}
	paths, err := decodeLockPaths(p[2])
	return owner, timeout, paths, err
}

// backendPaths lists the backend's view of paths.
func backendPaths(paths []*lockPath) []coordinate.LockPath {
	out := make([]coordinate.LockPath, len(paths))
	for i, p := range paths {
		out[i] = p.path
	}
	return out
}

// lockOnce locks paths with LockPaths, each distinct path once: a path
// named twice in one call is one lock, and every occurrence reports what
// it got (docs/spec/PROTOCOL.md §8.25: the call succeeds if every path was
// free, and a path is free of the call's own other occurrences). refused
// indexes paths.
func (js *JobServer) lockOnce(ctx context.Context, owner coordinate.Name, timeout time.Duration, paths []*lockPath, all bool) (locked []bool, refused int, err error) {
	first := make([]int, len(paths)) // index into distinct
	var distinct []coordinate.LockPath
	seen := make(map[string]int, len(paths))
	for i, p := range paths {
		j, ok := seen[p.path.Key]
		if !ok {
			j = len(distinct)
			seen[p.path.Key] = j
			distinct = append(distinct, p.path)
		}
		first[i] = j
	}
	got, refusedDistinct, err := js.ns.LockPaths(ctx, owner, timeout, distinct, all)
	if err != nil {
		return nil, -1, err
	}
	locked, refused = make([]bool, len(paths)), -1
	for i, j := range first {
		locked[i] = got[j]
		if j == refusedDistinct && refused < 0 {
			refused = i
		}
	}
	return locked, refused, nil
}

// lock: lock(locker_id, timeout, keys) -> (true, null), or (false, "PATH
// is not lockable") with nothing locked.
func (js *JobServer) lock(ctx context.Context, p []cbor.RawMessage) (any, error) {
	owner, timeout, paths, err := lockArgs(p)
	if err != nil {
		return nil, err
	}
	_, refused, err := js.lockOnce(ctx, owner, timeout, paths, true)
	switch {
	case err != nil:
		return nil, js.backendError("lock", err)
	case refused >= 0:
		return pair(false, message(paths[refused].repr+" is not lockable")), nil
	}
	return okPair(), nil
}

// locksome: locksome(locker_id, timeout, keys) -> ([path or null...],
// null): locks whichever paths are free.
func (js *JobServer) locksome(ctx context.Context, p []cbor.RawMessage) (any, error) {
	owner, timeout, paths, err := lockArgs(p)
	if err != nil {
		return nil, err
	}
	locked, _, err := js.lockOnce(ctx, owner, timeout, paths, false)
	if err != nil {
		return nil, js.backendError("locksome", err)
	}
	out := make([]any, len(paths))
	for i, path := range paths {
		if locked[i] {
			out[i] = path.raw
		}
	}
	return pair(out, nil), nil
}

// renew: renew(locker_id, timeout, keys) -> (true, null) with every
// deadline reset, or (false, "PATH is held by OWNER") when any path is not
// held by locker_id.
func (js *JobServer) renew(ctx context.Context, p []cbor.RawMessage) (any, error) {
	owner, timeout, paths, err := lockArgs(p)
	if err != nil {
		return nil, err
	}
	refused, holder, err := js.ns.RenewLocks(ctx, owner, timeout, backendPaths(paths))
	switch {
	case err != nil:
		return nil, js.backendError("renew", err)
	case refused >= 0:
		return pair(false, message(paths[refused].repr+" is held by "+holderName(holder))), nil
	}
	return okPair(), nil
}

// holderName words a lock holder as the Python daemon did.
func holderName(h *coordinate.Name) string {
	if h == nil {
		return "None"
	}
	return h.Bytes
}

// readlock: readlock(keys) -> [owner or null...] (not a pair).
func (js *JobServer) readlock(ctx context.Context, p []cbor.RawMessage) (any, error) {
	paths, err := decodeLockPaths(p[0])
	if err != nil {
		return nil, err
	}
	holders, err := js.ns.ReadLocks(ctx, backendPaths(paths))
	if err != nil {
		return nil, js.backendError("readlock", err)
	}
	out := make([]any, len(paths))
	for i, h := range holders {
		if h != nil {
			out[i] = nameValue(*h)
		}
	}
	return out, nil
}

// unlock: unlock(locker_id, keys) -> (true, null) with all released, or
// (false, "PATH is not held" / "PATH is held by OWNER").
func (js *JobServer) unlock(ctx context.Context, p []cbor.RawMessage) (any, error) {
	owner, err := decodeName(p[0], "locker_id")
	if err != nil {
		return nil, err
	}
	paths, err := decodeLockPaths(p[1])
	if err != nil {
		return nil, err
	}
	refused, holder, err := js.ns.UnlockPaths(ctx, owner, backendPaths(paths))
	switch {
	case err != nil:
		return nil, js.backendError("unlock", err)
	case refused >= 0 && holder == nil:
		return pair(false, message(paths[refused].repr+" is not held")), nil
	case refused >= 0:
		return pair(false, message(paths[refused].repr+" is held by "+holder.Bytes)), nil
	}
	return okPair(), nil
}

// deleteNamespace: delete_namespace(prefix) -> 0; drops every lock whose
// first label is prefix.
func (js *JobServer) deleteNamespace(ctx context.Context, p []cbor.RawMessage) (any, error) {
	first, err := labelKey(p[0])
	if err != nil {
		return nil, typeError("prefix: %v", err)
	}
	if err := js.ns.DropLocks(ctx, coordinate.NewLockPath(first)); err != nil {
		return nil, js.backendError("delete_namespace", err)
	}
	return 0, nil
}
