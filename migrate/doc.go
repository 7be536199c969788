// Package migrate copies work specs and their work units from one
// coordinate daemon to another through the legacy RPCs only, so it works
// between any two daemons that speak the protocol: the Python daemon,
// go-coordinate, ours, in either direction. `coordinated migrate` is its
// command line; docs/migration.md ("Moving a live queue with migrate") is
// the runbook.
//
// What is copied, per spec:
//   - the definition (set_work_spec, only when the target's differs) and
//     the control settings get_work_spec_meta reports (paused, weight,
//     max_running, interval, continuous);
//   - every unit, paged by key (get_work_units with `start`, one page of
//     PageSize units per request, never one giant reply), with its data
//     and status: AVAILABLE and FINISHED/FAILED as they are; PENDING on
//     the source becomes AVAILABLE on the target (the lease belongs to a
//     source worker). Finished units are written without chaining: the
//     unit is finished before its `output` is put back.
//
// Re-running copies only what is missing or changed, and never moves a
// target unit backwards: a unit the target has leased, finished or failed
// since is left alone while the source still has it queued.
//
// Priorities: the legacy protocol never returns a unit's priority (the
// Python daemon's own "TODO: return prio and status"). What it shows is
// the order get_work follows: a state-filtered get_work_units listing is
// sorted by priority, then key. Copy reads the first 10,000 queued units
// (AVAILABLE and PENDING) in that order and gives each run of ascending
// keys its own priority, the last run 0, so the target hands out those
// units in the source's order; units beyond them get priority 0.
package migrate
