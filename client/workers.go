package client

import (
	"context"
	"fmt"
)

// Workers, groups and the server's own methods (docs/spec/PROTOCOL.md
// §8.18 to §8.25, docs/dependencies.md for groups).

// WorkerHeartbeat registers or refreshes a worker record. mode, data and
// parent may be nil; parent is sent as a byte string when set.
func (c *Client) WorkerHeartbeat(ctx context.Context, worker string, mode any, expireSeconds int, data any, parent *string) error {
	var p any
	if parent != nil {
		p = []byte(*parent)
	}
	if s, ok := mode.(string); ok {
		mode = []byte(s)
	}
	res, err := c.Call(ctx, "worker_heartbeat", []byte(worker), mode, expireSeconds, data, p)
	if err != nil {
		return err
	}
	return okPair("worker_heartbeat", res)
}

// WorkerUnregister removes a worker record.
func (c *Client) WorkerUnregister(ctx context.Context, worker string) error {
	res, err := c.Call(ctx, "worker_unregister", []byte(worker))
	if err != nil {
		return err
	}
	return okPair("worker_unregister", res)
}

// pairMap unpacks a ({...}, message) answer whose value is a map.
func (c *Client) pairMap(ctx context.Context, method string, params ...any) (map[any]any, error) {
	res, err := c.Call(ctx, method, params...)
	if err != nil {
		return nil, err
	}
	v, msg, err := pair(method, res)
	if err != nil {
		return nil, err
	}
	if v == nil {
		if msg != "" {
			return nil, &InBandError{Method: method, Message: msg}
		}
		return nil, nil
	}
	m, ok := v.(map[any]any)
	if !ok {
		return nil, fmt.Errorf("%s: expected a map, got %v", method, v)
	}
	return m, nil
}

// ListWorkerModes maps each live worker id (as sent) to its mode.
func (c *Client) ListWorkerModes(ctx context.Context) (map[any]any, error) {
	return c.pairMap(ctx, "list_worker_modes")
}

// GetWorkerInfo returns a worker's last heartbeat data, nil if unknown.
func (c *Client) GetWorkerInfo(ctx context.Context, worker any) (map[any]any, error) {
	if s, ok := worker.(string); ok {
		worker = []byte(s)
	}
	return c.pairMap(ctx, "get_worker_info", worker)
}

// ModeCounts maps each mode to its number of live workers.
func (c *Client) ModeCounts(ctx context.Context) (map[any]any, error) {
	return c.pairMap(ctx, "mode_counts")
}

// WorkerStats returns worker_stats' map (not a pair).
func (c *Client) WorkerStats(ctx context.Context) (any, error) {
	return c.Call(ctx, "worker_stats")
}

// GetConfig returns the server's configuration tree.
func (c *Client) GetConfig(ctx context.Context) (any, error) {
	res, err := c.Call(ctx, "get_config")
	if err != nil {
		return nil, err
	}
	v, _, err := pair("get_config", res)
	return v, err
}

// Now returns the server's Unix time (an extension of ours and
// go-coordinate's; the Python daemon does not have it).
func (c *Client) Now(ctx context.Context) (int64, error) {
	res, err := c.Call(ctx, "now")
	if err != nil {
		return 0, err
	}
	n, ok := Int(res)
	if !ok {
		return 0, fmt.Errorf("now: expected an integer, got %v", res)
	}
	return n, nil
}

// GroupStatus returns a work-unit group's counts and state (an extension
// of ours, docs/dependencies.md).
func (c *Client) GroupStatus(ctx context.Context, group string) (map[any]any, error) {
	return c.pairMap(ctx, "group_status", []byte(group))
}

// CancelGroup fails every unfinished unit of a group and returns how many.
func (c *Client) CancelGroup(ctx context.Context, group string) (int64, error) {
	res, err := c.Call(ctx, "cancel_group", []byte(group))
	if err != nil {
		return 0, err
	}
	v, _, err := pair("cancel_group", res)
	if err != nil {
		return 0, err
	}
	n, _ := Int(v)
	return n, nil
}
