package worker

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/internal/testdaemon"
)

// A renewal longer than the queue grants (coordinate.MaxLease, 24 h) is
// clamped by the queue to 5 minutes (coordinate.ClampRenewLease); the
// worker believed the long lease, so the task ran on after its lease had
// lapsed and another worker could lease the unit. The worker asks for at
// most MaxLease, and its deadlines follow the queue's expiry.
func TestRenewBeyondMaxLease(t *testing.T) {
	e := newEnv(t)
	e.spec(map[string]any{"name": "long", "runtime": "go"})
	e.add("long", "u")
	type res struct {
		expires time.Time
		err     error
	}
	renewed := make(chan res, 1)
	release := make(chan struct{})
	e.start(Config{Lease: 120 * time.Second, Tasks: map[string]Task{"long": func(ctx context.Context, as []*Attempt) {
		err := as[0].Renew(ctx, 25*time.Hour)
		renewed <- res{as[0].Expires(), err}
		<-release
	}}})
	defer close(release)
	r := recv(t, "renew", renewed)
	if r.err != nil {
		t.Fatal(r.err)
	}
	u := e.unit("long", "u")
	if !u.Expiration.Equal(r.expires) {
		t.Errorf("after Renew(25h): the queue's lease ends %v, the worker believes %v", u.Expiration, r.expires)
	}
}

// Through a daemon, get_work's lease_time above 24 h is clamped to 5
// minutes: a worker configured with a longer Lease believed its lease
// ran for days while the daemon expired it after 5 minutes.
func TestRemoteLeaseBeyondMaxLease(t *testing.T) {
	daemon := testdaemon.Ours(t, "memory")
	c := testdaemon.Dial(t, daemon)
	ctx := t.Context()
	if err := c.SetWorkSpec(ctx, map[any]any{cbor.ByteString("name"): "s", cbor.ByteString("runtime"): "go"}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddWorkUnits(ctx, "s", []client.NewUnit{{Key: []byte("u"), Data: map[any]any{}}}); err != nil {
		t.Fatal(err)
	}
	r, err := NewRemote(client.DefaultConfig(daemon))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	believed := make(chan time.Time, 1)
	release := make(chan struct{})
	w, err := New(r, Config{NoSignals: true, Lease: 48 * time.Hour, LongPoll: -1,
		Logger: slog.New(slog.DiscardHandler),
		Tasks: map[string]Task{"s": func(ctx context.Context, as []*Attempt) {
			believed <- as[0].Expires()
			<-release
			_ = as[0].Finish(context.Background(), nil)
		}}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done }()
	defer close(release)
	exp := recv(t, "task start", believed)
	st, err := c.GetWorkUnitStatus(ctx, "s", []any{[]byte("u")})
	if err != nil || st[0] == nil {
		t.Fatalf("status: %v %v", st, err)
	}
	secs, ok := st[0].Expiration.(float64)
	if !ok {
		if n, ok2 := client.Int(st[0].Expiration); ok2 {
			secs, ok = float64(n), true
		}
	}
	if !ok {
		t.Fatalf("expiration %T %v", st[0].Expiration, st[0].Expiration)
	}
	daemonExp := time.Unix(0, int64(secs*1e9))
	if d := exp.Sub(daemonExp); d > 5*time.Second {
		t.Errorf("the worker believes its lease ends %v after the daemon's (%v vs %v)", d, exp, daemonExp)
	}
}
