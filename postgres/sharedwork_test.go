package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/coordinated/coordinated/coordinate"
)

// sharedNamespaces opens namespace name on each backend as SharedWork.
func sharedNamespaces(t *testing.T, name string, bs ...*Backend) []coordinate.SharedWork {
	t.Helper()
	var out []coordinate.SharedWork
	for _, b := range bs {
		ns, err := b.Namespace(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ns.(coordinate.SharedWork))
	}
	return out
}

// TestSharedWorkAcrossDaemons: what one Backend (daemon) says about its
// waiting calls reaches the other, which then announces work to it, per
// namespace; a daemon ignores its own notifications; announcements are
// sent only while another daemon waits.
func TestSharedWorkAcrossDaemons(t *testing.T) {
	ctx := t.Context()
	url := freshSchema(t)
	var bs [2]*Backend
	for i := range bs {
		b, err := New(ctx, url, Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		bs[i] = b
	}
	x := sharedNamespaces(t, "x", bs[0], bs[1])
	y := sharedNamespaces(t, "y", bs[0], bs[1])
	z := sharedNamespaces(t, "z", bs[0], bs[1])

	// A raw listener sees every announcement sent.
	raw, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(context.Background())
	if _, err := raw.Exec(ctx, "LISTEN "+workChannel); err != nil {
		t.Fatal(err)
	}

	woken := make(chan string, 16)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	for _, w := range []struct {
		name string
		sw   coordinate.SharedWork
	}{{"a/x", x[0]}, {"b/x", x[1]}, {"a/y", y[0]}, {"b/y", y[1]}, {"a/z", z[0]}} {
		go w.sw.WatchWork(watchCtx, func() {
			select {
			case woken <- w.name:
			default:
			}
		})
	}

	if x[1].OthersWaiting() {
		t.Fatal("b: OthersWaiting in x before anyone waits")
	}
	x[0].Waiting(30 * time.Second)
	waitFor(t, "b to hear that a waits in x", x[1].OthersWaiting)
	// Then b waits in y; once a has heard that (notifications arrive in
	// the order sent), a has also seen its own x notification: it must
	// have ignored it.
	y[1].Waiting(30 * time.Second)
	waitFor(t, "a to hear that b waits in y", y[0].OthersWaiting)
	if x[0].OthersWaiting() {
		t.Error("a: OthersWaiting in x after its own notification")
	}
	if z[0].OthersWaiting() || z[1].OthersWaiting() {
		t.Error("OthersWaiting in z, where nobody waits")
	}
	// Drop the wake-ups of the listeners connecting (both have, since
	// each heard the other).
	for len(woken) > 0 {
		<-woken
	}

	// Nobody waits in z: b's announcement there is not sent. Its
	// announcement in x is, and wakes a's watcher of x only.
	z[1].AnnounceWork()
	x[1].AnnounceWork()
	n, err := raw.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1 " + bs[1].shared.instance + " - "; !strings.HasPrefix(n.Payload, want) {
		// x is the first namespace created in the fresh schema.
		t.Errorf("first announcement = %q, want b's in x (%q...)", n.Payload, want)
	}
	select {
	case got := <-woken:
		if got != "a/x" {
			t.Errorf("woken %q, want a/x", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's watcher of x was not woken by b's announcement")
	}
	// The next announcement, a's in y (where b waits), comes after any
	// sent before it: had b's in z been sent, the raw listener would
	// see it first.
	y[0].AnnounceWork()
	n, err = raw.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d %s - ", y[0].(*watchedNamespace).ns.id, bs[0].shared.instance); !strings.HasPrefix(n.Payload, want) {
		t.Errorf("second announcement = %q, want a's in y (%q...)", n.Payload, want)
	}
}
