package crashtest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/coordinated/coordinated/cborrpc"
)

// The workload: spec "a" chains to spec "b" ("then"). Clients add units to
// a, lease work from both, and finish what they lease; finishing an a unit
// with output ["<key>-out"] creates that unit in b.
const (
	specA     = "a"
	specB     = "b"
	outSuffix = "-out"
)

// model is what the clients were told: every acknowledged add and finish,
// and the adds sent without an answer (which may or may not have happened).
type model struct {
	mu         sync.Mutex
	added      map[string]bool // a-keys whose add was acknowledged
	maybeAdded map[string]bool // a-keys sent in an add that got no answer
	finished   map[[2]string]bool
}

func newModel() *model {
	return &model{added: map[string]bool{}, maybeAdded: map[string]bool{}, finished: map[[2]string]bool{}}
}

func (m *model) sendingAdd(keys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		m.maybeAdded[k] = true
	}
}

func (m *model) ackAdd(keys []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		m.added[k] = true
	}
}

func (m *model) ackFinish(spec, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished[[2]string{spec, key}] = true
}

// unitStates lists a spec's units by status through get_work_units with a
// state filter, failing if a key shows up under two statuses.
func unitStates(t *testing.T, c *cborrpc.Client, spec string) map[string]int {
	t.Helper()
	states := map[string]int{}
	for st := 1; st <= 5; st++ {
		start := ""
		for {
			res, err := c.Call("get_work_units", []byte(spec), map[string]any{"state": st, "limit": 10000, "start": []byte(start)})
			if err != nil {
				t.Fatalf("get_work_units %s state %d: %v", spec, st, err)
			}
			list := pairFirst(t, res).([]any)
			for _, item := range list {
				key := string(asBytes(t, asList(t, item)[0]))
				if old, dup := states[key]; dup {
					t.Errorf("unit %s/%s is listed under status %d and %d", spec, key, old, st)
				}
				states[key] = st
				start = key + "\x00"
			}
			if len(list) < 10000 {
				break
			}
		}
	}
	return states
}

// verify checks the daemon's state against the model:
//   - every acknowledged add is present, and nothing is present that no
//     client ever sent;
//   - every acknowledged finish is FINISHED;
//   - no unit is in two states, and count_work_units agrees with listings;
//   - chained outputs were created exactly once: b holds "<k>-out" exactly
//     for the FINISHED a units k (a finish applied twice would re-add the
//     b unit, making an acknowledged-finished b unit available again).
func verify(t *testing.T, addr string, m *model) (units int) {
	t.Helper()
	c, err := cborrpc.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := unitStates(t, c, specA)
	b := unitStates(t, c, specB)
	for spec, states := range map[string]map[string]int{specA: a, specB: b} {
		res, err := c.Call("count_work_units", []byte(spec))
		if err != nil {
			t.Fatalf("count_work_units %s: %v", spec, err)
		}
		want := map[int]int{}
		for _, st := range states {
			want[st]++
		}
		got := map[int]int{}
		for k, v := range pairFirst(t, res).(map[any]any) {
			got[asInt(t, k)] = asInt(t, v)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("count_work_units %s = %v, listings say %v", spec, got, want)
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	var missing []string
	for k := range m.added {
		if _, ok := a[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("%d acknowledged adds are missing, e.g. %q", len(missing), missing[:min(5, len(missing))])
	}
	for k := range a {
		if !m.added[k] && !m.maybeAdded[k] {
			t.Errorf("unit a/%s exists but no client ever added it", k)
		}
	}
	for r := range m.finished {
		states := map[string]map[string]int{specA: a, specB: b}[r[0]]
		if st := states[r[1]]; st != 4 {
			t.Errorf("acknowledged finish of %s/%s, but its status is %d", r[0], r[1], st)
		}
	}
	for k, st := range a {
		if _, chained := b[k+outSuffix]; chained != (st == 4) {
			t.Errorf("a/%s has status %d but its chained output exists=%v", k, st, chained)
		}
	}
	for k := range b {
		base, ok := strings.CutSuffix(k, outSuffix)
		if !ok || a[base] != 4 {
			t.Errorf("b/%s is not the output of a finished a unit", k)
		}
	}
	return len(a) + len(b)
}

// Result decoding helpers: results arrive as generic CBOR values.

func pairFirst(t *testing.T, res any) any {
	t.Helper()
	p := asList(t, res)
	if len(p) != 2 || p[1] != nil {
		t.Fatalf("want a (value, null) pair, got %v", res)
	}
	return p[0]
}

func asList(t *testing.T, v any) []any {
	t.Helper()
	switch l := v.(type) {
	case []any:
		return l
	case cborrpc.Tuple:
		return l
	}
	t.Fatalf("want an array, got %T %v", v, v)
	return nil
}

func asBytes(t *testing.T, v any) []byte {
	t.Helper()
	switch b := v.(type) {
	case []byte:
		return b
	case string:
		return []byte(b)
	}
	t.Fatalf("want a string, got %T %v", v, v)
	return nil
}

func asInt(t *testing.T, v any) int {
	t.Helper()
	switch n := v.(type) {
	case uint64:
		return int(n)
	case int64:
		return int(n)
	}
	t.Fatalf("want an integer, got %T %v", v, v)
	return 0
}
