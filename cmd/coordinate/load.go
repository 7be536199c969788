package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strconv"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/flow"
	"github.com/coordinated/coordinated/internal/progress"
	"github.com/coordinated/coordinated/pyvalue"
)

// Commands that send specs and units: load, addwork, flow.

// defaultBatch is how many units one add_work_units request carries, so
// that any file streams in bounded memory (the Python CLI sent a whole
// file in one request).
const defaultBatch = 10000

// maxBatchBytes also bounds a request by the size of its lines (their
// data included): a request never grows past it by more than one line.
const maxBatchBytes = 16 << 20

func (a *app) load(p *parsed) error {
	path := p.str("work_spec_path")
	spec, err := flow.ReadSpecFile(path)
	if err != nil {
		return err
	}
	nice := 0
	if p.has("nice") {
		if nice, err = strconv.Atoi(p.str("nice")); err != nil {
			return usageError{fmt.Sprintf("argument -n/--nice: invalid int value: '%s'", p.str("nice"))}
		}
	}
	spec[pyvalue.StringKey("nice")] = nice
	if err := flow.CheckSpecFile(path, spec); err != nil {
		return err
	}
	name, _ := flow.Name(spec)
	nameValue := spec[pyvalue.StringKey("name")]
	c, err := a.client()
	if err != nil {
		return err
	}
	if p.has("no_work") {
		if err := c.SetWorkSpec(a.ctx, spec); err != nil {
			return err
		}
		a.printf("loading work units from []\n")
		a.printf("no work units. done.\n")
		return nil
	}
	uf, total, err := a.checkUnits(p)
	if err != nil {
		return err
	}
	defer uf.close()
	if err := c.SetWorkSpec(a.ctx, spec); err != nil {
		return err
	}
	a.printf("loading work units from %s\n", uf.display)
	if total == 0 {
		a.printf("no work units. done.\n")
		return nil
	}
	a.printf("pushing work units\n")
	unique, err := a.sendUnits(p, c, name, uf, total, true)
	if err != nil {
		return err
	}
	a.printf("finished writing %d work units to work_spec=%s\n", unique, pyvalue.Repr(nameValue))
	return nil
}

func (a *app) addwork(p *parsed) error {
	name, err := a.specName(p)
	if err != nil {
		return err
	}
	if !p.has("work_units_path") {
		return usageError{"need -u/--work-units"}
	}
	uf, total, err := a.checkUnits(p)
	if err != nil {
		return err
	}
	defer uf.close()
	c, err := a.client()
	if err != nil {
		return err
	}
	_, err = a.sendUnits(p, c, name, uf, total, false)
	return err
}

// checkUnits opens -u and reads it once: every line must be good (unless
// --keep-going, which reports bad ones on stderr). It returns the number
// of units to send.
func (a *app) checkUnits(p *parsed) (*unitsFile, int64, error) {
	uf, err := a.openUnitsFile(p.str("work_units_path"))
	if err != nil {
		return nil, 0, err
	}
	var total int64
	var bad func(*lineError)
	badLines := 0
	if p.has("keep_going") {
		bad = func(e *lineError) {
			badLines++
			fmt.Fprintf(a.stderr, "coordinate: skipping %v\n", e)
		}
	}
	err = uf.scan(func(units []unit, _ int) error { total += int64(len(units)); return nil }, bad)
	if err != nil {
		uf.close()
		if _, ok := err.(*lineError); ok {
			return nil, 0, fmt.Errorf("%w (nothing was sent; --keep-going skips bad lines)", err)
		}
		return nil, 0, err
	}
	return uf, total, nil
}

// sendUnits streams the file to add_work_units in batches, with a
// progress bar on a terminal. With unique it returns the number of
// distinct keys (what the Python CLI's load reported, having read the file
// into a dict); it keeps an 8-byte hash per key for that (80 MB for ten
// million units), sorted at the end to count the distinct ones.
func (a *app) sendUnits(p *parsed, c *client.Client, spec string, uf *unitsFile, total int64, unique bool) (int64, error) {
	batchSize := defaultBatch
	if s := p.str("batch"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, usageError{"argument --batch: want a positive integer, got " + s}
		}
		batchSize = n
	}
	bar := progress.New(a.stderr, "units", isTerminal(a.stderr))
	label := "work spec " + spec
	var seen []uint64
	batch := make([]client.NewUnit, 0, min(batchSize, int(total)))
	var sent int64
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := c.AddWorkUnits(a.ctx, spec, batch); err != nil {
			return fmt.Errorf("work spec %q: adding units %d to %d: %w", spec, sent+1, sent+int64(len(batch)), err)
		}
		sent += int64(len(batch))
		clear(batch)
		batch = batch[:0]
		batchBytes = 0
		bar.Update(label, sent, total)
		return nil
	}
	err := uf.scan(func(units []unit, size int) error {
		// A line's length bounds its units' encoded keys and data: the
		// request stays near maxBatchBytes whatever the data's size.
		cost := size + 64*len(units)
		if len(batch) > 0 && batchBytes+cost > maxBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		for _, u := range units {
			if unique {
				h := fnv.New64a()
				h.Write([]byte(u.key))
				seen = append(seen, h.Sum64())
			}
			batch = append(batch, client.NewUnit{Key: u.key, Data: u.data})
		}
		batchBytes += cost
		if len(batch) >= batchSize || batchBytes >= maxBatchBytes {
			return flush()
		}
		return nil
	}, func(*lineError) {})
	if err == nil {
		err = flush()
	}
	bar.Finish(label, sent, total)
	if err != nil {
		return 0, err
	}
	if unique {
		slices.Sort(seen)
		return int64(len(slices.Compact(seen))), nil
	}
	return sent, nil
}

func (a *app) flow(p *parsed) error {
	base, err := a.flowBaseConfig(p.str("config"))
	if err != nil {
		return err
	}
	specs, err := flow.ReadFlowFile(p.pos["file"][0], base)
	if err != nil {
		return err
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	for _, s := range specs {
		if err := c.SetWorkSpec(a.ctx, s.Def); err != nil {
			return fmt.Errorf("work spec %q: %w", s.Name, err)
		}
	}
	return nil
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && progress.IsTerminal(f)
}
