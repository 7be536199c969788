package migrate

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"

	"github.com/fxamacker/cbor/v2"

	"github.com/coordinated/coordinated/client"
)

// DefaultPageSize is how many units one get_work_units page carries.
const DefaultPageSize = 1000

const maxPageSize = 9999

// rankWindow is how many queued units the priority pass reads: the
// largest page the Python daemon returns.
const rankWindow = 10000

// Options control Copy.
type Options struct {
	// Specs names the work specs to copy; empty means every spec on the
	// source.
	Specs []string
	// PauseSource pauses each spec on the source before copying it, so
	// no source worker starts a unit that is being copied.
	PauseSource bool
	// PageSize is the units per get_work_units page (default 1000).
	PageSize int
	// Progress, if set, is called after each page.
	Progress func(Progress)
	// Logger receives one line per spec (default: discarded).
	Logger *slog.Logger
}

// Progress reports how far Copy is.
type Progress struct {
	Spec        string
	Done, Total int64 // units examined in this spec, units the source counted
	SpecIndex   int   // 0-based, of SpecCount
	SpecCount   int
}

// SpecResult says what Copy did for one spec.
type SpecResult struct {
	Name string
	// SpecWritten is true when the definition or control settings were
	// written to the target.
	SpecWritten bool
	// Copied counts units written to the target (missing or changed);
	// Unchanged those already equal; Kept those the target has moved on
	// (leased, finished or failed there) and that were left alone.
	Copied, Unchanged, Kept int64
}

// Copy copies specs and units from src to dst.
func Copy(ctx context.Context, src, dst *client.Client, opts Options) ([]SpecResult, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	// The Python daemon answers at most 10,000 units; a page asks for one
	// more than PageSize.
	opts.PageSize = min(opts.PageSize, maxPageSize)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	names := opts.Specs
	if len(names) == 0 {
		var err error
		if names, err = src.WorkSpecNames(ctx); err != nil {
			return nil, fmt.Errorf("listing work specs on %s: %w", src.Address(), err)
		}
	}
	var results []SpecResult
	for i, name := range names {
		r, err := copySpec(ctx, src, dst, name, opts, i, len(names))
		if err != nil {
			return results, fmt.Errorf("work spec %q: %w", name, err)
		}
		opts.Logger.Info("copied work spec", "spec", name, "definition_written", r.SpecWritten,
			"units_copied", r.Copied, "units_unchanged", r.Unchanged, "units_kept", r.Kept)
		results = append(results, r)
	}
	return results, nil
}

func copySpec(ctx context.Context, src, dst *client.Client, name string, opts Options, index, count int) (SpecResult, error) {
	r := SpecResult{Name: name}
	def, err := src.GetWorkSpec(ctx, name)
	if err != nil {
		return r, fmt.Errorf("reading the definition on the source: %w", err)
	}
	if def == nil {
		return r, fmt.Errorf("no such work spec on the source %s", src.Address())
	}
	meta, err := src.GetWorkSpecMeta(ctx, name)
	if err != nil {
		return r, fmt.Errorf("reading the control settings on the source: %w", err)
	}
	if opts.PauseSource && meta.Status != client.Paused {
		if err := src.PauseWorkSpec(ctx, name, true); err != nil {
			return r, fmt.Errorf("pausing on the source: %w", err)
		}
	}
	if r.SpecWritten, err = copyDefinition(ctx, dst, name, def, meta, !opts.PauseSource); err != nil {
		return r, err
	}
	counts, err := src.CountWorkUnits(ctx, name)
	if err != nil {
		return r, fmt.Errorf("counting units on the source: %w", err)
	}
	var total int64
	for _, n := range counts {
		total += n
	}
	ranks, err := queueRanks(ctx, src, name)
	if err != nil {
		return r, err
	}
	pc := pageCopier{src: src, dst: dst, spec: name, ranks: ranks, result: &r}
	var start any
	var done int64
	for {
		limit := opts.PageSize + 1
		page, err := src.GetWorkUnits(ctx, name, client.UnitsQuery{Start: start, Limit: limit})
		if err != nil {
			return r, fmt.Errorf("listing units on the source: %w", err)
		}
		// A full answer means there may be more.
		more := len(page) == limit
		// start is inclusive on the Python daemon and ours, exclusive on
		// go-coordinate: drop the unit the previous page ended with.
		if start != nil && len(page) > 0 && keyEqual(page[0].Key, start) {
			page = page[1:]
		}
		if len(page) > opts.PageSize {
			page = page[:opts.PageSize]
		}
		if len(page) > 0 {
			if err := pc.copyPage(ctx, page); err != nil {
				return r, err
			}
			done += int64(len(page))
			start = page[len(page)-1].Key
		}
		if opts.Progress != nil {
			opts.Progress(Progress{Spec: name, Done: done, Total: max(total, done), SpecIndex: index, SpecCount: count})
		}
		if !more {
			return r, nil
		}
	}
}

// copyDefinition writes the definition when the target's differs, then
// the control settings when they differ (the paused/runnable status only
// if withStatus: under -pause-source the source's status is the one
// migrate set). It reports whether it wrote.
func copyDefinition(ctx context.Context, dst *client.Client, name string, def any, meta *client.WorkSpecMeta, withStatus bool) (bool, error) {
	have, err := dst.GetWorkSpec(ctx, name)
	if err != nil {
		return false, fmt.Errorf("reading the definition on the target: %w", err)
	}
	wrote := false
	if have == nil || !reflect.DeepEqual(have, def) {
		if err := dst.SetWorkSpec(ctx, def); err != nil {
			return false, fmt.Errorf("writing the definition on the target: %w", err)
		}
		wrote = true
	}
	haveMeta, err := dst.GetWorkSpecMeta(ctx, name)
	if err != nil {
		return wrote, fmt.Errorf("reading the control settings on the target: %w", err)
	}
	ctl := client.Map{}
	if withStatus && haveMeta.Status != meta.Status {
		ctl["status"] = meta.Status
	}
	if haveMeta.Continuous != meta.Continuous {
		ctl["continuous"] = meta.Continuous
	}
	if !sameNumber(haveMeta.Interval, meta.Interval) {
		ctl["interval"] = meta.Interval
	}
	if !sameNumber(haveMeta.MaxRunning, meta.MaxRunning) {
		ctl["max_running"] = meta.MaxRunning
	}
	if meta.Weight != nil && !sameNumber(haveMeta.Weight, meta.Weight) {
		ctl["weight"] = meta.Weight
	}
	if len(ctl) == 0 {
		return wrote, nil
	}
	if err := dst.ControlWorkSpec(ctx, name, ctl); err != nil {
		return wrote, fmt.Errorf("writing the control settings on the target: %w", err)
	}
	return true, nil
}

func sameNumber(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, ok1 := client.Float(a)
	y, ok2 := client.Float(b)
	return ok1 && ok2 && x == y
}

// queueRanks reads the source's first queued units in dispatch order and
// returns the priority that reproduces that order, per key (see the
// package comment). Units it returns no entry for get 0.
func queueRanks(ctx context.Context, src *client.Client, name string) (map[string]float64, error) {
	queued, err := src.GetWorkUnits(ctx, name, client.UnitsQuery{States: []int{client.Available, client.Pending}, Limit: rankWindow})
	if err != nil {
		return nil, fmt.Errorf("listing queued units on the source: %w", err)
	}
	run := make([]int, len(queued))
	runs := 0
	for i := range queued {
		if i > 0 && bytes.Compare(keyBytes(queued[i].Key), keyBytes(queued[i-1].Key)) < 0 {
			runs++
		}
		run[i] = runs
	}
	ranks := make(map[string]float64, len(queued))
	for i, u := range queued {
		if p := float64(runs - run[i]); p != 0 {
			ranks[string(keyBytes(u.Key))] = p
		}
	}
	return ranks, nil
}

func keyBytes(k any) []byte {
	switch x := k.(type) {
	case []byte:
		return x
	case string:
		return []byte(x)
	case cbor.ByteString:
		return []byte(x)
	}
	return nil
}

func keyEqual(a, b any) bool { return bytes.Equal(keyBytes(a), keyBytes(b)) }
