package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// TestLocksSharedAcrossDaemons: two daemons on one database see one lock
// service. Rounds of concurrent callers on both lock a path or one of its
// extensions: conflicting locks must never be held together.
func TestLocksSharedAcrossDaemons(t *testing.T) {
	url := freshSchema(t)
	var nss [2]coordinate.Namespace
	for i := range nss {
		_, nss[i] = openBackend(t, url, Options{MaxConns: 4})
	}
	ctx := t.Context()
	a := coordinate.NewLockPath("a")
	if _, refused, err := nss[0].LockPaths(ctx, coordinate.Name{Bytes: "d0"}, time.Minute, []coordinate.LockPath{a}, true); err != nil || refused != -1 {
		t.Fatalf("lock on daemon 0: %d, %v", refused, err)
	}
	if _, refused, err := nss[1].LockPaths(ctx, coordinate.Name{Bytes: "d1"}, time.Minute, []coordinate.LockPath{coordinate.NewLockPath("a", "b")}, true); err != nil || refused != 0 {
		t.Fatalf("daemon 1 locked an extension of daemon 0's lock: %d, %v", refused, err)
	}
	if err := nss[1].DropLocks(ctx, a); err != nil {
		t.Fatal(err)
	}

	const callers = 8
	paths := []coordinate.LockPath{a}
	for i := range callers {
		paths = append(paths, coordinate.NewLockPath("a", fmt.Sprint(i)))
	}
	for round := range 15 {
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := paths[1+i]
				if i%2 == 0 {
					p = a
				}
				if _, _, err := nss[i%2].LockPaths(ctx, coordinate.Name{Bytes: fmt.Sprint(i)}, time.Minute, []coordinate.LockPath{p}, true); err != nil {
					t.Errorf("round %d caller %d: %v", round, i, err)
				}
			}()
		}
		wg.Wait()
		holders, err := nss[round%2].ReadLocks(ctx, paths)
		if err != nil {
			t.Fatal(err)
		}
		held := 0
		for _, h := range holders[1:] {
			if h != nil {
				held++
			}
		}
		if holders[0] != nil && held > 0 {
			t.Fatalf("round %d: [a] held by %s together with %d of its extensions", round, holders[0].Bytes, held)
		}
		if err := nss[0].DropLocks(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
}
