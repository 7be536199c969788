package coordinatetest

import (
	"fmt"
	"slices"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// lockTests cover the lock service (coordinate.Locker).
var lockTests = []test{
	{"Conflicts", testLocksConflict},
	{"RenewUnlockExpiry", testLocksRenewUnlockExpiry},
	{"Drop", testLocksDrop},
}

func lp(labels ...string) coordinate.LockPath { return coordinate.NewLockPath(labels...) }

// lockPaths locks and fails the test on error.
func (e *env) lockPaths(owner string, ttl time.Duration, all bool, paths ...coordinate.LockPath) ([]bool, int) {
	e.t.Helper()
	locked, refused, err := e.ns.LockPaths(e.ctx, text(owner), ttl, paths, all)
	if err != nil {
		e.t.Fatalf("LockPaths: %v", err)
	}
	return locked, refused
}

// holders reads the holders of paths as strings ("" = free).
func (e *env) holders(paths ...coordinate.LockPath) []string {
	e.t.Helper()
	hs, err := e.ns.ReadLocks(e.ctx, paths)
	if err != nil {
		e.t.Fatalf("ReadLocks: %v", err)
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		if h != nil {
			out[i] = h.Bytes
		}
	}
	return out
}

func testLocksConflict(e *env) {
	if _, refused := e.lockPaths("L1", time.Minute, true, lp("a", "b")); refused != -1 {
		e.t.Fatalf("lock a/b refused at %d", refused)
	}
	// The path, a prefix and an extension conflict, whoever asks; an
	// all-or-nothing call that meets one locks nothing.
	for _, p := range []coordinate.LockPath{lp("a"), lp("a", "b"), lp("a", "b", "c"), lp()} {
		locked, refused := e.lockPaths("L2", time.Minute, true, lp("c"), p)
		if refused != 1 || slices.Contains(locked, true) {
			e.t.Errorf("lock c and %q: locked %v, refused %d; want nothing locked, refused 1", p.Key, locked, refused)
		}
	}
	if got := e.holders(lp("c"), lp("a", "b"), lp("a")); fmt.Sprint(got) != "[ L1 ]" {
		e.t.Errorf("holders after refused calls: %q", got)
	}
	// Without all, the free paths are locked; a sibling is free.
	locked, refused := e.lockPaths("L3", time.Minute, false, lp("a"), lp("a", "x"), lp("d", "\x00"))
	if refused != -1 || fmt.Sprint(locked) != "[false true true]" {
		e.t.Errorf("locksome: locked %v, refused %d", locked, refused)
	}
}

func testLocksRenewUnlockExpiry(e *env) {
	x := lp("x")
	e.lockPaths("me", 10*time.Second, true, x)
	if refused, holder, err := e.ns.RenewLocks(e.ctx, text("you"), 10*time.Second, []coordinate.LockPath{x}); err != nil || refused != 0 || holder == nil || holder.Bytes != "me" {
		e.t.Errorf("renew by another: %d, %v, %v", refused, holder, err)
	}
	if refused, holder, err := e.ns.UnlockPaths(e.ctx, text("you"), []coordinate.LockPath{x}); err != nil || refused != 0 || holder == nil || holder.Bytes != "me" {
		e.t.Errorf("unlock by another: %d, %v, %v", refused, holder, err)
	}
	e.clock.Add(8 * time.Second)
	if refused, _, err := e.ns.RenewLocks(e.ctx, text("me"), 10*time.Second, []coordinate.LockPath{x}); err != nil || refused != -1 {
		e.t.Errorf("renew: %d, %v", refused, err)
	}
	e.clock.Add(10 * time.Second) // the deadline itself: still held
	if got := e.holders(x); got[0] != "me" {
		e.t.Errorf("at the deadline: holder %q", got[0])
	}
	e.clock.Add(time.Nanosecond)
	if got := e.holders(x); got[0] != "" {
		e.t.Errorf("after the deadline: holder %q", got[0])
	}
	if refused, holder, err := e.ns.UnlockPaths(e.ctx, text("me"), []coordinate.LockPath{x}); err != nil || refused != 0 || holder != nil {
		e.t.Errorf("unlock of an expired lock: %d, %v, %v", refused, holder, err)
	}
	e.lockPaths("you", time.Minute, true, x)
	if refused, _, err := e.ns.UnlockPaths(e.ctx, text("you"), []coordinate.LockPath{x, x}); err != nil || refused != -1 {
		e.t.Errorf("unlock: %d, %v", refused, err)
	}
	if _, refused := e.lockPaths("me", time.Minute, true, lp()); refused != -1 {
		e.t.Errorf("the empty path is not free after unlocking: refused %d", refused)
	}
}

func testLocksDrop(e *env) {
	e.lockPaths("me", time.Minute, true, lp("ns1", "a"), lp("ns1"+"\x00", "a"), lp("ns2", "a"))
	if err := e.ns.DropLocks(e.ctx, lp("ns1")); err != nil {
		e.t.Fatal(err)
	}
	if got := e.holders(lp("ns1", "a"), lp("ns1"+"\x00", "a"), lp("ns2", "a")); fmt.Sprint(got) != "[ me me]" {
		e.t.Errorf("holders after dropping ns1: %q", got)
	}
}
