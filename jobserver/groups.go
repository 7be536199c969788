package jobserver

import (
	"context"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
)

// Work-unit groups are an extension beyond the legacy protocol
// (docs/dependencies.md): units join a group through the `group` key of
// their add_work_units metadata. Legacy clients never call these methods.

// groupStatus: group_status(group) -> ({counts, complete, stalled,
// last_progress}, null). counts maps integer status codes to counts, like
// count_work_units; last_progress is float Unix seconds or null.
func (js *JobServer) groupStatus(ctx context.Context, p []cbor.RawMessage) (any, error) {
	group, err := decodeName(p[0], "group")
	if err != nil {
		return nil, err
	}
	gs, err := js.ns.GroupStatus(ctx, group.Bytes)
	if err != nil {
		return nil, js.backendError("group_status", err)
	}
	return pair(groupStatusMap(gs), nil), nil
}

// groupStatusMap renders a GroupStatus with byte-string keys, as the other
// server-generated maps are.
func groupStatusMap(gs *coordinate.GroupStatus) map[cbor.ByteString]any {
	return map[cbor.ByteString]any{
		"counts":        statusCounts(gs.Counts),
		"complete":      gs.Complete,
		"stalled":       gs.Stalled,
		"last_progress": seconds(gs.LastProgress),
	}
}

// cancelGroup: cancel_group(group) -> (count, null). Every unit of the
// group that is not yet FINISHED or FAILED becomes FAILED with traceback
// "cancelled"; a worker holding one loses its lease.
func (js *JobServer) cancelGroup(ctx context.Context, p []cbor.RawMessage) (any, error) {
	group, err := decodeName(p[0], "group")
	if err != nil {
		return nil, err
	}
	n, err := js.ns.CancelGroup(ctx, group.Bytes)
	if err != nil {
		return nil, js.backendError("cancel_group", err)
	}
	return pair(n, nil), nil
}
