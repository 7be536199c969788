package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/pyvalue"
)

// Work spec commands: work_specs, work_spec, status, summary, pause,
// resume, delete, config.

func (a *app) workSpecs(p *parsed) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	names, err := c.WorkSpecNames(a.ctx)
	if err != nil {
		return err
	}
	sort.Strings(names)
	if p.str("output") == "json" {
		return a.printJSON(names)
	}
	for _, n := range names {
		a.printf("%s\n", n)
	}
	return nil
}

// printJSON writes v as indented JSON (the -o json output).
func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	a.printf("%s\n", b)
	return nil
}

func (a *app) workSpec(p *parsed) error {
	name, c, err := a.specClient(p)
	if err != nil {
		return err
	}
	spec, err := c.GetWorkSpec(a.ctx, name)
	if err != nil {
		return err
	}
	if p.has("json") {
		out, err := pyvalue.JSONDumps(spec, 4)
		if err != nil {
			return fmt.Errorf("work spec %q: %w", name, err)
		}
		a.printf("%s\n", out)
		return nil
	}
	a.printf("%s", pyvalue.YAMLDump(spec, true))
	return nil
}

// statusMap is TaskMaster.status(): the counts under num_* names.
func statusMap(counts map[int]int64) map[any]any {
	var total int64
	for _, n := range counts {
		total += n
	}
	return map[any]any{
		"num_available": counts[client.Available],
		"num_pending":   counts[client.Pending],
		"num_blocked":   counts[client.Blocked],
		"num_finished":  counts[client.Finished],
		"num_failed":    counts[client.Failed],
		"num_tasks":     total,
	}
}

func (a *app) counts(name string) (map[int]int64, error) {
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	counts, err := c.CountWorkUnits(a.ctx, name)
	if err != nil {
		return nil, fmt.Errorf("work spec %q: %w", name, err)
	}
	return counts, nil
}

func (a *app) status(p *parsed) error {
	name, err := a.specName(p)
	if err != nil {
		return err
	}
	counts, err := a.counts(name)
	if err != nil {
		return err
	}
	out, err := pyvalue.JSONDumps(statusMap(counts), 4)
	if err != nil {
		return err
	}
	a.printf("%s\n", out)
	return nil
}

func (a *app) summary(p *parsed) error {
	if !p.has("watch") {
		return a.summaryOnce(p, false)
	}
	interval := 2 * time.Second
	if s := p.str("interval"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			return usageError{"argument --interval: want a positive number of seconds, got " + s}
		}
		interval = time.Duration(f * float64(time.Second))
	}
	for {
		if err := a.summaryOnce(p, true); err != nil {
			return err
		}
		select {
		case <-a.ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (a *app) summaryOnce(p *parsed, watch bool) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	names, err := c.WorkSpecNames(a.ctx)
	if err != nil {
		return err
	}
	sort.Strings(names)
	rows := make(map[string]map[any]any, len(names))
	for _, n := range names {
		counts, err := a.counts(n)
		if err != nil {
			return err
		}
		rows[n] = statusMap(counts)
	}
	now := float64(time.Now().UnixNano()) / 1e9
	if p.str("output") == "json" {
		out := map[string]any{"_NOW": now}
		for n, r := range rows {
			out[n] = jsonable(r)
		}
		return a.printJSON(out)
	}
	text := p.has("text") || !p.has("json")
	if p.has("json") {
		all := map[any]any{"_NOW": now}
		for n, r := range rows {
			all[n] = r
		}
		out, err := pyvalue.JSONDumps(all, -1)
		if err != nil {
			return err
		}
		a.printf("%s\n", out)
	}
	if !text {
		return nil
	}
	if watch {
		a.printf("\x1b[H\x1b[2J%s\n\n", time.Now().Format(time.DateTime))
	}
	a.printf("Work spec               Avail  Pending  Blocked   Failed Finished    Total\n")
	a.printf("==================== ======== ======== ======== ======== ======== ========\n")
	for _, n := range names {
		r := rows[n]
		a.printf("%-20s %8d %8d %8d %8d %8d %8d\n", n, r["num_available"], r["num_pending"], r["num_blocked"],
			r["num_failed"], r["num_finished"], r["num_tasks"])
	}
	return nil
}

func (a *app) pause(p *parsed) error  { return a.setPaused(p, true) }
func (a *app) resume(p *parsed) error { return a.setPaused(p, false) }

func (a *app) setPaused(p *parsed, paused bool) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	// The Python CLI ignores the answer: an unknown spec is not an error.
	err = c.PauseWorkSpec(a.ctx, p.pos["spec"][0], paused)
	if _, inBand := err.(*client.InBandError); inBand {
		return nil
	}
	return err
}

func (a *app) deleteAll(p *parsed) error {
	if !p.has("assume_yes") {
		a.printf("Delete everything in the current coordinate environment?")
		line, _ := readLine(a.stdin)
		if r := lower(line); r != "y" && r != "yes" {
			a.printf("not deleting anything\n")
			return nil
		}
	}
	a.printf("deleting all\n")
	c, err := a.client()
	if err != nil {
		return err
	}
	_, err = c.Clear(a.ctx)
	return err
}

func (a *app) configCmd(p *parsed) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	cfg, err := c.GetConfig(a.ctx)
	if err != nil {
		return err
	}
	out := pyvalue.WireYAMLDump(cfg)
	if path := p.str("output"); path != "" {
		return writeFile(path, out)
	}
	a.printf("%s", out)
	return nil
}
