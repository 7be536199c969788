package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/coordinated/coordinated/client"
	"github.com/coordinated/coordinated/pyvalue"
)

// Work unit commands: work_units, work_unit, retry, clear, prioritize.
// Unit names given on the command line are Python 2 str: byte strings.

func unitKeys(names []string) []any {
	keys := make([]any, len(names))
	for i, n := range names {
		keys[i] = []byte(n)
	}
	return keys
}

func keyText(k any) string { s, _ := client.Text(k); return s }

func (a *app) workUnits(p *parsed) error {
	name, err := a.specName(p)
	if err != nil {
		return err
	}
	limit, hasLimit, err := p.int("limit")
	if err != nil {
		return err
	}
	q := client.UnitsQuery{}
	if s := p.str("status"); s != "" {
		q.States = []int{client.StatusCode(s)}
	}
	if hasLimit {
		// Sent whatever its value, as the Python CLI sends it.
		q.Limit, q.SendLimit = limit, true
	}
	c, err := a.client()
	if err != nil {
		return err
	}
	units, err := c.GetWorkUnits(a.ctx, name, q)
	if err != nil {
		return fmt.Errorf("work spec %q: %w", name, err)
	}
	// dict(pairs): the last pair of a key wins; then sorted keys.
	byKey := map[string]client.KeyData{}
	for _, u := range units {
		byKey[keyText(u.Key)] = u
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// The Python CLI's names[:limit] when the limit is not 0; a
	// negative one drops that many from the end.
	switch {
	case hasLimit && limit > 0 && len(keys) > limit:
		keys = keys[:limit]
	case hasLimit && limit < 0:
		keys = keys[:max(0, len(keys)+limit)]
	}
	if p.str("output") == "json" {
		out := make([]map[string]any, 0, len(keys))
		for _, k := range keys {
			entry := map[string]any{"key": k}
			if p.has("details") {
				entry["data"] = jsonable(byKey[k].Data)
			}
			out = append(out, entry)
		}
		return a.printJSON(out)
	}
	for _, k := range keys {
		u := byKey[k]
		if !p.has("details") {
			a.printf("%s\n", k)
			continue
		}
		data, isMap := u.Data.(map[any]any)
		if u.Data == nil || (isMap && len(data) == 0) || isEmpty(u.Data) {
			a.printf("%s: no info\n", k)
			continue
		}
		tback := ""
		if isMap {
			for dk, dv := range data {
				if s, ok := client.Text(dk); ok && s == "traceback" {
					if tb, ok := client.Text(dv); ok && tb != "" {
						tback = tb + "\n"
						shown := make(map[any]any, len(data))
						for k2, v2 := range data {
							shown[k2] = v2
						}
						shown[dk] = []byte("displayed below")
						data = shown
					}
				}
			}
		}
		var shown any = u.Data
		if isMap {
			shown = data
		}
		a.printf("%s: %s\n%s", pyvalue.WireRepr(u.Key), pyvalue.WirePFormat(shown, 4), tback)
	}
	return nil
}

// isEmpty is Python's falsiness of a container or string.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case []byte:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	}
	return false
}

// jsonable turns wire values into what encoding/json can print: byte
// strings as text, maps with string keys, tuples as lists.
func jsonable(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := client.Text(k)
			if !ok {
				ks = pyvalue.Repr(k)
			}
			out[ks] = jsonable(e)
		}
		return out
	}
	if l, ok := client.List(v); ok {
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

func (a *app) workUnit(p *parsed) error {
	name, c, err := a.specClient(p)
	if err != nil {
		return err
	}
	for _, unit := range p.pos["unit"] {
		st, err := c.GetWorkUnitStatus(a.ctx, name, []any{[]byte(unit)})
		if err != nil {
			return fmt.Errorf("work spec %q: %w", name, err)
		}
		s := st[0]
		if s == nil {
			return fmt.Errorf("work spec %q has no work unit %q", name, unit)
		}
		a.printf("%s (%s)\n", unit, pyvalue.WireRepr(s.Raw[mapKey(s.Raw, "status")]))
		if s.HasExpiration {
			when := time.Now()
			if f, ok := client.Float(s.Expiration); ok {
				when = time.Unix(int64(f), 0)
			}
			a.printf("  Expires: %s\n", when.Format("Mon Jan _2 15:04:05 2006"))
		}
		if s.HasWorker {
			a.printf("  Worker: %s (%s)\n", pyvalue.WireStr(s.WorkerID), a.workerSummary(c, s.WorkerID))
		}
		if s.HasTraceback {
			a.printf("  Traceback:\n%s\n", pyvalue.WireStr(s.Traceback))
		}
	}
	return nil
}

// mapKey finds a map's key whose text is key.
func mapKey(m map[any]any, key string) any {
	for k := range m {
		if s, ok := client.Text(k); ok && s == key {
			return k
		}
	}
	return key
}

// workerSummary is "host on ip, ip" from the worker's heartbeat, as the
// Python CLI's work_unit shows it.
func (a *app) workerSummary(c *client.Client, worker any) string {
	hb, err := c.GetWorkerInfo(a.ctx, worker)
	if err != nil || len(hb) == 0 {
		return "No information"
	}
	host := ""
	for _, k := range []string{"fqdn", "hostname"} {
		if v, ok := client.Get(hb, k); ok && !isEmpty(v) && v != nil {
			host = pyvalue.WireStr(v)
			break
		}
	}
	var ips []string
	if v, ok := client.Get(hb, "ipaddrs"); ok {
		l, _ := client.List(v)
		for _, ip := range l {
			ips = append(ips, pyvalue.WireStr(ip))
		}
	}
	ipaddrs := strings.Join(ips, ", ")
	if host != "" && ipaddrs != "" {
		return host + " on " + ipaddrs
	}
	return host + ipaddrs
}

func (a *app) retry(p *parsed) error {
	name, c, err := a.specClient(p)
	if err != nil {
		return err
	}
	retried := 0
	retry := func(keys []any) error {
		err := c.Retry(a.ctx, name, keys...)
		if _, inBand := err.(*client.InBandError); inBand {
			err = nil // TaskMaster.retry only logs a refused update
		}
		return err
	}
	if p.has("all") {
		for {
			units, err := c.GetWorkUnits(a.ctx, name, client.UnitsQuery{States: []int{client.Failed}, Limit: 1000})
			if err != nil {
				return fmt.Errorf("work spec %q: %w", name, err)
			}
			if len(units) == 0 {
				break
			}
			keys := make([]any, len(units))
			for i, u := range units {
				keys[i] = u.Key
			}
			if err := retry(keys); err != nil {
				return err
			}
			retried += len(keys)
		}
	} else {
		units := p.pos["unit"]
		if err := retry(unitKeys(units)); err != nil {
			return err
		}
		retried += len(units)
	}
	switch {
	case retried == 0:
		a.printf("Nothing to do.\n")
	case retried == 1:
		a.printf("Retried 1 work unit.\n")
	default:
		a.printf("Retried %d work units.\n", retried)
	}
	return nil
}

func (a *app) clear(p *parsed) error {
	name, c, err := a.specClient(p)
	if err != nil {
		return err
	}
	q := client.DelQuery{}
	if units := p.pos["unit"]; len(units) > 0 {
		q.Keys = unitKeys(units)
	}
	if s := p.str("status"); s != "" {
		q.State = client.StatusCode(s)
	} else {
		q.All = q.Keys == nil
	}
	n, err := c.DelWorkUnits(a.ctx, name, q)
	if _, inBand := err.(*client.InBandError); inBand {
		n, err = 0, nil // TaskMaster.del_work_units returns the 0 of (0, msg)
	}
	if err != nil {
		return err
	}
	a.printf("Removed %d work units.\n", n)
	return nil
}

func (a *app) prioritize(p *parsed) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	err = c.PrioritizeWorkUnits(a.ctx, p.pos["spec"][0], unitKeys(p.pos["unit"]), nil, nil)
	if _, inBand := err.(*client.InBandError); inBand {
		return nil // logged at debug level by the Python client
	}
	return err
}
