// Package worker runs Go functions as the workers of a coordinate job
// queue, beside Python's coordinate_worker on the same queues.
//
// A work spec is run by this package when it has `runtime: go`; its `task`
// key (default: the spec's name) names one of the Tasks given to the
// Worker. A Task receives a batch of attempts: distinct units of one spec,
// leased to this worker, at least one. The Worker runs up to Concurrency
// tasks at once, each in its own goroutine, and heartbeats like the Python
// worker so `coordinate workers` lists it.
//
// Expiry (as go-coordinate's worker did): the task's context is cancelled
// 30 s before the earliest lease of its batch expires, and attempts still
// pending 15 s after that expiry are failed by the library. A short lease
// (under a minute) is cancelled halfway through and failed at the start of
// its last quarter instead. Attempt.Renew extends a lease and moves both
// deadlines. A panicking task fails its pending attempts with the panic and
// the stack in the unit's data.
//
// Run stops on context cancellation or SIGTERM: it stops fetching, lets
// running tasks finish for StopTimeout, then cancels them and gives their
// pending attempts back (status AVAILABLE) so another worker retries them.
//
// The Worker talks to a Queue: a coordinate.Namespace in the same process
// (memory, or PostgreSQL shared with daemons), or a daemon through Remote.
package worker
