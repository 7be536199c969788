package web

import (
	"context"
	"errors"
	"testing"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/internal/replyhold"
)

// deferringHandler answers like update_work_unit on a backend that hands
// its durability wait over (internal/replyhold): the reply is built from
// the outcome later.
type deferringHandler struct{}

func (deferringHandler) Handle(ctx context.Context, _ *cborrpc.Request) (any, error) {
	replyhold.Allow(ctx)
	replyhold.Defer(ctx, func(func(error)) {})
	replyhold.Reply(ctx, func(err error) (any, error) { return "ok", err })
	return nil, nil
}

// A held request is counted and timed when its reply is built (its change
// durable), with the error it is answered, not when Handle returns.
func TestRPCMetricsOfHeldReplies(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	h := f.web.RPCHandler(deferringHandler{}, func(string) bool { return true })
	for i, outcome := range []error{nil, errors.New("journal failed")} {
		var hold replyhold.Hold
		ctx := replyhold.With(context.Background(), &hold)
		if _, err := h.Handle(ctx, &cborrpc.Request{Method: "update_work_unit"}); err != nil {
			t.Fatal(err)
		}
		held := hold.Take()
		if held.Await == nil {
			t.Fatal("the handler's reply was not held")
		}
		fams := f.scrape()
		f.want(fams, float64(i), "coordinated_rpc_duration_seconds", "method", "update_work_unit")
		// What the server does once the outcome is known (cborrpc/held.go).
		_, err := held.Build(outcome)
		held.Built(err)
		fams = f.scrape()
		f.want(fams, float64(i+1), "coordinated_rpc_duration_seconds", "method", "update_work_unit")
		if n, _ := value(fams, "coordinated_rpc_errors_total", "method", "update_work_unit"); n != float64(i) {
			t.Errorf("after outcome %v: %g failures counted, want %d", outcome, n, i)
		}
	}
}
