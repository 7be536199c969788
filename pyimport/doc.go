// Package pyimport reads the state the Python coordinate daemon
// (coordinate==0.1.5, coordinate/job_server.py) saved on disk and loads it
// into a coordinate.Namespace, so that coordinated can take over a Python
// daemon's snapshot directory.
//
// The Python daemon writes two kinds of file, both a plain sequence of CBOR
// items (optionally compressed, chosen by the .gz, .bz2 or .xz suffix):
//
//   - a snapshot (snapshot_path_format, e.g. DIR/snapshot_{timestamp}):
//     one item per work spec, the array WorkSpec.__getstate__ returns,
//     with an .md5 sidecar holding the hex MD5 of the uncompressed bytes;
//   - an action log (log_path_format): one [action, args] item per change
//     made after the snapshot before it, for set_work_spec, del_work_spec,
//     add_work_unit, update_work_unit and del_work_units.
//
// Locate finds the newest complete snapshot and the logs written after it
// the way the Python daemon looks for snapshots; Read parses them into a
// State and replays the logs over it; Load stores a State through
// Namespace.ImportWorkSpec. Reading is all done before anything is stored,
// so bad input (a truncated file, an unknown shape, an unknown action)
// fails with a *FormatError naming the file and byte offset and changes
// nothing. docs/migration.md describes the take-over; the format details
// are pinned by the files in testdata/, written by the real Python daemon.
package pyimport
