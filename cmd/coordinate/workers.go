package main

import (
	"errors"
	"sort"
	"strings"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/pyvalue"
)

func (a *app) workers(p *parsed) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	modes, err := c.ListWorkerModes(a.ctx)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(modes))
	byID := map[string]any{}
	for k, m := range modes {
		id := pyvalue.WireStr(k)
		ids = append(ids, id)
		byID[id] = m
	}
	sort.Strings(ids)
	if p.str("output") == "json" {
		out := []map[string]any{}
		for _, id := range ids {
			entry := map[string]any{"worker_id": id, "mode": jsonable(byID[id])}
			if p.has("details") {
				hb, err := c.GetWorkerInfo(a.ctx, id)
				if err != nil {
					return err
				}
				entry["heartbeat"] = jsonable(hb)
			}
			out = append(out, entry)
		}
		return a.printJSON(out)
	}
	for _, id := range ids {
		a.printf("%s (%s)\n", id, pyvalue.WireStr(byID[id]))
		if !p.has("details") {
			continue
		}
		hb, err := c.GetWorkerInfo(a.ctx, id)
		if err != nil {
			return err
		}
		// Python prints the heartbeat in its dict's hash order; sorted here.
		lines := make([]string, 0, len(hb))
		for k, v := range hb {
			lines = append(lines, "  "+pyvalue.WireStr(k)+": "+pyvalue.WireStr(v)+"\n")
		}
		sort.Strings(lines)
		a.printf("%s", strings.Join(lines, ""))
	}
	return nil
}

// workerStatsOrder is the order Python 2's dict repr gives worker_stats'
// three keys (their hash order).
var workerStatsOrder = []string{"num_expirable", "num_children", "num_workers"}

func (a *app) workerStats(*parsed) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	ws, err := c.WorkerStats(a.ctx)
	if err != nil {
		return err
	}
	m, ok := ws.(map[any]any)
	if !ok {
		a.printf("%s\n", pyvalue.WireRepr(ws))
		return nil
	}
	var parts []string
	rest := make(map[any]any, len(m))
	for k, v := range m {
		rest[k] = v
	}
	for _, name := range workerStatsOrder {
		if k := mapKey(m, name); k != nil {
			if v, ok := m[k]; ok {
				parts = append(parts, pyvalue.WireRepr(k)+": "+pyvalue.WireRepr(v))
				delete(rest, k)
			}
		}
	}
	if len(rest) > 0 {
		r := pyvalue.WireRepr(rest)
		parts = append(parts, r[1:len(r)-1])
	}
	a.printf("{%s}\n", strings.Join(parts, ", "))
	return nil
}

func (a *app) runOne(p *parsed) error {
	if _, err := a.client(); err != nil {
		return err
	}
	return errors.New("run_one runs Go tasks only, and this coordinate binary has none built in; " +
		"run Python tasks with coordinate_worker (nothing was leased)")
}

func (a *app) archive(p *parsed) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	return c.Archive(a.ctx, p.list("work_spec_name")...)
}

var _ = client.Available
