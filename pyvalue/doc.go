// Package pyvalue renders and builds values the way Python 2 did, for the
// parts of coordinated that must print or send exactly what the Python
// coordinate daemon and CLI printed or sent: repr() (in-band messages, the
// CLI's rpc and worker_stats), str() (the daemon's expire_seconds warning,
// the CLI's workers and work_unit), pprint.pformat (work_units --details),
// json.dumps (status, work_spec --json), PyYAML's dump (work_spec, config),
// and the Python 2 typing of YAML scalars (ASCII strings are str, i.e.
// CBOR byte strings; others unicode).
//
// Values are those cborrpc.DecMode decodes into: []byte (str), string
// (unicode), cborrpc.Tuple, []any, map[any]any with cbor.ByteString keys,
// uint64/int64, float64, bool, nil.
package pyvalue
