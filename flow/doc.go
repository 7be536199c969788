// Package flow reads the work spec files of the coordinate CLI: flow files
// (`coordinate flow FILE`: a `flows:` tree of specs and groups) and single
// spec files (`coordinate load -w FILE`), producing the definitions to send
// with set_work_spec, typed as Python 2 would have sent them.
//
// A flow file is translated exactly as the Python TaskMaster.add_flow did
// (docs/spec/CLI.md §4): a mapping with `min_gb` is a spec named by the
// dotted path of keys leading to it; any other mapping is a group; every
// spec gets the base configuration overlaid with its own `config`; every
// `then` must name a spec of the same file. Each definition is then
// checked with the daemon's own rules (coordinate.ParseWorkSpec: `nice`
// and `weight`, `then_preempts`, `runtime`, `max_running`, `interval`,
// ...), so a file that the daemon would refuse fails here, before anything
// is sent, with an error naming the file, line and field.
package flow
