// Package replyhold lets a request's reply wait for its change to become
// durable without the request's goroutine waiting for it.
//
// A connection that answers one request at a time normally sleeps until
// the journal's sync (or the PostgreSQL commit) that makes its change
// durable, is woken, and writes its reply. Waking a goroutine per change
// costs more than the write itself once syncs are shared by many
// changes, so instead:
//
//   - the server that writes replies (cborrpc) puts a Hold in each
//     request's context;
//   - a handler that can build its reply from the change's outcome
//     alone (jobserver's update_work_unit) calls Allow, and after the
//     backend returns, Reply with the function that builds that reply;
//   - a backend that is about to block until its change is durable calls
//     Defer instead, giving the function that registers a callback with
//     whatever makes it durable, and returns at once;
//   - the server, seeing the hold taken (Take), registers the callback:
//     it runs on the goroutine that completed the sync or the commit,
//     builds the reply and writes it without blocking.
//
// Holds are per request and only touched by the request's own goroutine
// until Take hands their functions to the server.
package replyhold

import "context"

type key struct{}

// Hold is one request's offer to have its reply held. The zero value is
// an offer nobody has accepted.
type Hold struct {
	allowed bool
	await   func(done func(error))
	reply   func(error) (any, error)
	after   []func(error)
}

// With returns ctx carrying h.
func With(ctx context.Context, h *Hold) context.Context {
	return context.WithValue(ctx, key{}, h)
}

func from(ctx context.Context) *Hold {
	h, _ := ctx.Value(key{}).(*Hold)
	return h
}

// Allow marks the request of ctx as one whose reply may be held: its
// handler builds the reply from the outcome (Reply). It reports whether
// ctx offers a hold at all.
func Allow(ctx context.Context) bool {
	h := from(ctx)
	if h == nil {
		return false
	}
	h.allowed = true
	return true
}

// Defer is called by a backend instead of blocking until its change is
// durable. When the request allows it, Defer keeps await and returns
// true: the backend returns at once, and await is later called with the
// callback to run, exactly once and without blocking, when the change is
// durable (nil) or can no longer become so (its error). Otherwise Defer
// returns false and the backend waits as usual. A request holds its reply
// for one change only: a second Defer returns false. Only a call that
// succeeded may defer: the reply is built from the outcome of the wait
// alone, so a call that fails answers with its error and, if it committed
// something on the way, waits for that itself.
func Defer(ctx context.Context, await func(done func(error))) bool {
	h := from(ctx)
	if h == nil || !h.allowed || h.await != nil {
		return false
	}
	h.await = await
	return true
}

// Deferred reports whether the backend called for the request of ctx
// deferred its wait: the handler must then give the reply's builder to
// Reply instead of answering from the outcome it has.
func Deferred(ctx context.Context) bool {
	h := from(ctx)
	return h != nil && h.await != nil
}

// Reply sets what builds the held reply from the change's outcome: the
// result or error the handler would have returned had the backend waited
// and returned err. It runs on the goroutine that made the change durable
// and must not block.
func Reply(ctx context.Context, build func(err error) (any, error)) {
	if h := from(ctx); h != nil {
		h.reply = build
	}
}

// WhenAnswered runs f with the error the request of ctx is answered with
// (nil for a result), for wrappers that observe replies (metrics, logs):
// at once with err, what Handle returned, or, when the reply is held, once
// it is built, on the goroutine that writes it (f must not block then).
func WhenAnswered(ctx context.Context, err error, f func(err error)) {
	h := from(ctx)
	if h == nil || h.await == nil {
		f(err)
		return
	}
	h.after = append(h.after, f)
}

// Held is what a request left in its Hold when its reply is held.
type Held struct {
	// Await registers the callback of the change's outcome.
	Await func(done func(error))
	// Build makes the reply from the outcome; nil if the handler set
	// none: the server then answers a nil outcome with what the handler
	// returned and an error with the error.
	Build func(error) (any, error)
	// After are the functions to run, in order, once the reply is built
	// (WhenAnswered).
	After []func(error)
}

// Take returns what the backend and the handlers left in h (a nil Await
// when the reply is not held) and resets h for the connection's next
// request.
func (h *Hold) Take() Held {
	held := Held{Await: h.await, Build: h.reply, After: h.after}
	*h = Hold{}
	return held
}

// Built runs the After functions with the error the reply answers.
func (held *Held) Built(err error) {
	for _, f := range held.After {
		f(err)
	}
}
