package jobserver

import (
	"context"
	"errors"
	"math"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/cborx"
	"github.com/coordinated/coordinated/pyvalue"
)

// workerHeartbeat: worker_heartbeat(worker_id, mode, expire_seconds, data,
// parent) -> (true, warning or null) (§8.18).
func (js *JobServer) workerHeartbeat(ctx context.Context, p []cbor.RawMessage) (any, error) {
	id, err := decodeName(p[0], "worker_id")
	if err != nil {
		return nil, err
	}
	expireSeconds, shown, err := decodeExpireSeconds(p[2])
	if err != nil {
		return nil, err
	}
	parent, err := decodeOptionalName(p[4], "parent")
	if err != nil {
		return nil, err
	}
	if parent != nil && parent.Bytes == "" {
		parent = nil // Python links a child only to a parent that is set (`if parent:`)
	}
	expire, warning := coordinate.ClampWorkerExpire(expireSeconds, shown)
	hb := coordinate.Heartbeat{
		Worker: id,
		Mode:   dataOrNull(p[1]),
		Data:   dataOrNull(p[3]),
		Parent: parent,
		Expire: expire,
	}
	if err := js.ns.WorkerHeartbeat(ctx, hb); err != nil {
		return nil, js.backendError("worker_heartbeat", err)
	}
	if warning != "" {
		return pair(true, message(warning)), nil
	}
	return okPair(), nil
}

// decodeExpireSeconds reads worker_heartbeat's expire_seconds as
// decodeNumber does, with the text Python's str() gave the value, which
// its warning shows (pyStrNumber); a null, which Python 2 compared below
// every number, is negative and shows as "None" (the record lives 300 s).
func decodeExpireSeconds(raw cbor.RawMessage) (float64, string, error) {
	if len(raw) > 0 && cborx.IsNull(raw) {
		return math.Inf(-1), "None", nil
	}
	f, err := decodeNumber(raw, "expire_seconds")
	if err != nil {
		return 0, "", err
	}
	return f, pyStrNumber(raw, f), nil
}

// pyStrNumber is Python 2's str() of a number parameter sent as raw and
// read as f by decodeNumber: a numeric string as it is (docs/compat.md,
// worker-expire-string), an integer with every digit, a bool as
// True/False (pyvalue.WireStr); f as pyvalue.FloatStr when raw is not a
// plain scalar (a tuple-wrapped number).
func pyStrNumber(raw cbor.RawMessage, f float64) string {
	var v any
	if decMode.Unmarshal(raw, &v) != nil {
		return pyvalue.FloatStr(f)
	}
	if _, tagged := v.(cbor.Tag); tagged {
		return pyvalue.FloatStr(f)
	}
	return pyvalue.WireStr(v)
}

// dataOrNull stores a parameter verbatim, null when it was omitted.
func dataOrNull(raw cbor.RawMessage) coordinate.Data {
	if len(raw) == 0 {
		return coordinate.Null
	}
	return coordinate.Data(raw)
}

// workerUnregister: worker_unregister(worker_id) -> (ok, msg) (§8.19).
func (js *JobServer) workerUnregister(ctx context.Context, p []cbor.RawMessage) (any, error) {
	id, err := decodeName(p[0], "worker_id")
	if err != nil {
		return nil, err
	}
	err = js.ns.UnregisterWorker(ctx, id.Bytes)
	if errors.Is(err, coordinate.ErrNoSuchWorker) {
		return pair(false, message("no worker "+pyReprName(id))), nil
	} else if err != nil {
		return nil, js.backendError("worker_unregister", err)
	}
	return okPair(), nil
}

// listWorkerModes: list_worker_modes() -> ({worker_id: mode}, null) over
// live workers (§8.20). Modes are echoed as stored.
func (js *JobServer) listWorkerModes(ctx context.Context, _ []cbor.RawMessage) (any, error) {
	workers, err := js.ns.Workers(ctx)
	if err != nil {
		return nil, js.backendError("list_worker_modes", err)
	}
	pairs := make([]cborx.Pair, len(workers))
	for i, w := range workers {
		pairs[i] = cborx.Pair{Key: encodeName(w.ID), Value: cbor.RawMessage(dataOrNull(cbor.RawMessage(w.Mode)))}
	}
	return pair(joinMap(pairs), nil), nil
}

// getWorkerInfo: get_worker_info(worker_id) -> (data, null), or (null,
// null) for an unknown or expired worker (§8.21). When the data is a map,
// a copy gets `age_seconds` (seconds since the last heartbeat), which the
// Python daemon documented but forgot to add.
func (js *JobServer) getWorkerInfo(ctx context.Context, p []cbor.RawMessage) (any, error) {
	id, err := decodeName(p[0], "worker_id")
	if err != nil {
		return nil, err
	}
	w, err := js.ns.Worker(ctx, id.Bytes)
	if errors.Is(err, coordinate.ErrNoSuchWorker) {
		return pair(nil, nil), nil
	} else if err != nil {
		return nil, js.backendError("get_worker_info", err)
	}
	pairs, err := splitMap(w.Data)
	if err != nil {
		return pair(rawData(w.Data), nil), nil
	}
	kept := pairs[:0]
	for _, pr := range pairs {
		if k, ok := stringKey(pr.Key); ok && k == "age_seconds" {
			continue
		}
		kept = append(kept, pr)
	}
	age := js.clock.Now().Sub(w.LastHeard).Seconds()
	kept = append(kept, cborx.Pair{Key: encodeBytes("age_seconds"), Value: encodeFloat(age)})
	return pair(joinMap(kept), nil), nil
}

// modeCounts: mode_counts() -> ({mode: count}, null) over live workers
// (§8.22); a null mode is a null key.
func (js *JobServer) modeCounts(ctx context.Context, _ []cbor.RawMessage) (any, error) {
	workers, err := js.ns.Workers(ctx)
	if err != nil {
		return nil, js.backendError("mode_counts", err)
	}
	index := make(map[string]int) // encoded mode -> position in pairs
	var modes []string
	var counts []int
	for _, w := range workers {
		m := string(dataOrNull(cbor.RawMessage(w.Mode)))
		i, ok := index[m]
		if !ok {
			i = len(modes)
			index[m] = i
			modes = append(modes, m)
			counts = append(counts, 0)
		}
		counts[i]++
	}
	pairs := make([]cborx.Pair, len(modes))
	for i, m := range modes {
		pairs[i] = cborx.Pair{Key: cbor.RawMessage(m), Value: cborx.AppendHead(nil, cborx.MajorUint, uint64(counts[i]))}
	}
	return pair(joinMap(pairs), nil), nil
}

// workerStats: worker_stats() -> {num_workers, num_children,
// num_expirable}, a plain map (§8.23): live workers, live workers with a
// parent, live workers.
func (js *JobServer) workerStats(ctx context.Context, _ []cbor.RawMessage) (any, error) {
	workers, err := js.ns.Workers(ctx)
	if err != nil {
		return nil, js.backendError("worker_stats", err)
	}
	children := 0
	for _, w := range workers {
		if w.Parent != nil {
			children++
		}
	}
	return map[cbor.ByteString]any{
		"num_workers":   len(workers),
		"num_children":  children,
		"num_expirable": len(workers),
	}, nil
}
