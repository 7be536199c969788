package coordinate

import "testing"

func meta(mod func(m *WorkSpecMeta)) *WorkSpecMeta {
	m := &WorkSpecMeta{Weight: 20, ThenPreempts: true}
	if mod != nil {
		mod(m)
	}
	return m
}

func TestChooseWorkSpecFilters(t *testing.T) {
	work := func(name string, mod func(m *WorkSpecMeta)) SpecCandidate {
		return SpecCandidate{Name: name, Meta: meta(mod), Available: 1}
	}
	tests := []struct {
		name  string
		cands []SpecCandidate
		req   WorkRequest
		opts  SchedulerOptions
		want  string // "" = none
	}{
		{"empty", nil, WorkRequest{}, SchedulerOptions{}, ""},
		{"plain", []SpecCandidate{work("a", nil)}, WorkRequest{}, SchedulerOptions{}, "a"},
		{"no work", []SpecCandidate{{Name: "a", Meta: meta(nil)}}, WorkRequest{}, SchedulerOptions{}, ""},
		{"continuous ready", []SpecCandidate{{Name: "a", Meta: meta(nil), ContinuousReady: true}}, WorkRequest{}, SchedulerOptions{}, "a"},
		{"paused", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.Paused = true })}, WorkRequest{}, SchedulerOptions{}, ""},
		{"weight zero", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.Weight = 0 })}, WorkRequest{}, SchedulerOptions{}, ""},
		{"weight negative", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.Weight = -1 })}, WorkRequest{}, SchedulerOptions{}, ""},
		{"name filter", []SpecCandidate{work("a", nil), work("b", nil)}, WorkRequest{WorkSpecs: []string{"b", "zz"}}, SchedulerOptions{}, "b"},
		{"name filter miss", []SpecCandidate{work("a", nil)}, WorkRequest{WorkSpecs: []string{"zz"}}, SchedulerOptions{}, ""},
		{"runtime default excludes go", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.Runtime = "go" })}, WorkRequest{}, SchedulerOptions{}, ""},
		{"runtime listed", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.Runtime = "go" }), work("b", nil)}, WorkRequest{Runtimes: []string{"go"}}, SchedulerOptions{}, "a"},
		{"runtime list excludes empty", []SpecCandidate{work("b", nil)}, WorkRequest{Runtimes: []string{"go"}}, SchedulerOptions{}, ""},
		{"max_running reached", []SpecCandidate{{Name: "a", Meta: meta(func(m *WorkSpecMeta) { m.MaxRunning = 2 }), Available: 1, Pending: 2}}, WorkRequest{}, SchedulerOptions{}, ""},
		{"max_running not reached", []SpecCandidate{{Name: "a", Meta: meta(func(m *WorkSpecMeta) { m.MaxRunning = 2 }), Available: 1, Pending: 1}}, WorkRequest{}, SchedulerOptions{}, "a"},
		{"min_gb not enforced", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.MinGB = 8 })}, WorkRequest{AvailableGB: 1}, SchedulerOptions{}, "a"},
		{"min_gb enforced", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.MinGB = 8 })}, WorkRequest{AvailableGB: 1}, SchedulerOptions{EnforceMinGB: true}, ""},
		{"min_gb enforced fits", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.MinGB = 8 })}, WorkRequest{AvailableGB: 8}, SchedulerOptions{EnforceMinGB: true}, "a"},
		{"min_gb unknown memory", []SpecCandidate{work("a", func(m *WorkSpecMeta) { m.MinGB = 8 })}, WorkRequest{}, SchedulerOptions{EnforceMinGB: true}, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i, ok := ChooseWorkSpec(tc.cands, tc.req, tc.opts)
			got := ""
			if ok {
				got = tc.cands[i].Name
			}
			if got != tc.want {
				t.Errorf("chose %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChooseWorkSpecOrdering(t *testing.T) {
	c := func(name string, avail, pending int, best float64, mod func(m *WorkSpecMeta)) SpecCandidate {
		return SpecCandidate{Name: name, Meta: meta(mod), Available: avail, Pending: pending, BestPriority: best}
	}
	tests := []struct {
		name  string
		cands []SpecCandidate
		want  string
	}{
		{"spec priority beats unit priority", []SpecCandidate{
			c("a", 1, 0, 100, nil),
			c("b", 1, 0, 0, func(m *WorkSpecMeta) { m.Priority = 1 }),
		}, "b"},
		{"real units beat continuous", []SpecCandidate{
			{Name: "a", Meta: meta(func(m *WorkSpecMeta) { m.Weight = 1000 }), ContinuousReady: true},
			c("b", 1, 5, -10, func(m *WorkSpecMeta) { m.Weight = 1 }),
		}, "b"},
		{"unit priority", []SpecCandidate{c("a", 1, 0, 0, nil), c("b", 1, 0, 9, nil)}, "b"},
		{"negative unit priority still scheduled", []SpecCandidate{c("a", 1, 0, -5, nil)}, "a"},
		{"weights 1 vs 300", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Weight = 1 }),
			c("b", 1, 0, 0, func(m *WorkSpecMeta) { m.Weight = 300 }),
		}, "b"},
		{"load (1+pending)/weight", []SpecCandidate{
			c("a", 1, 1, 0, func(m *WorkSpecMeta) { m.Weight = 6 }), // 2/6
			c("b", 1, 1, 0, func(m *WorkSpecMeta) { m.Weight = 4 }), // 2/4
		}, "a"},
		{"tie by name", []SpecCandidate{c("b", 1, 0, 0, nil), c("a", 1, 0, 0, nil)}, "a"},
		{"then preempts", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "b"; m.Weight = 100 }),
			c("b", 1, 5, 0, func(m *WorkSpecMeta) { m.Weight = 1 }),
		}, "b"},
		{"then_preempts false", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "b"; m.ThenPreempts = false; m.Weight = 100 }),
			c("b", 1, 0, 0, func(m *WorkSpecMeta) { m.Weight = 1 }),
		}, "a"},
		{"chain most downstream wins", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "b" }),
			c("b", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "c" }),
			c("c", 1, 3, 0, nil),
		}, "c"},
		{"successor without work does not preempt", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "b" }),
			c("b", 0, 0, 0, nil),
		}, "a"},
		{"looks through a successor without work", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "b"; m.Weight = 100 }),
			c("b", 0, 4, 0, func(m *WorkSpecMeta) { m.Then = "c" }),
			c("c", 1, 3, 0, func(m *WorkSpecMeta) { m.Weight = 1 }),
		}, "c"},
		{"the spec before the successor decides", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "b"; m.Weight = 100 }),
			c("b", 0, 4, 0, func(m *WorkSpecMeta) { m.Then = "c"; m.ThenPreempts = false }),
			c("c", 1, 3, 0, func(m *WorkSpecMeta) { m.Weight = 1 }),
		}, "a"},
		{"looks through several and past a lower unit priority", []SpecCandidate{
			c("a", 1, 0, 5, func(m *WorkSpecMeta) { m.Then = "b"; m.Weight = 100; m.ThenPreempts = false }),
			c("b", 1, 0, 1, func(m *WorkSpecMeta) { m.Then = "x" }),
			c("x", 0, 0, 0, func(m *WorkSpecMeta) { m.Then = "c"; m.Paused = true }),
			c("c", 1, 3, 5, func(m *WorkSpecMeta) { m.Weight = 1 }),
		}, "c"},
		{"a path that loops without a candidate", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "x"; m.Weight = 1 }),
			c("x", 0, 0, 0, func(m *WorkSpecMeta) { m.Then = "y" }),
			c("y", 0, 0, 0, func(m *WorkSpecMeta) { m.Then = "x" }),
			c("c", 1, 0, 0, func(m *WorkSpecMeta) { m.Weight = 100 }),
		}, "c"},
		{"a path back to itself does not preempt", []SpecCandidate{
			c("a", 1, 2, 0, func(m *WorkSpecMeta) { m.Then = "x" }),
			c("x", 0, 0, 0, func(m *WorkSpecMeta) { m.Then = "a" }),
			c("b", 1, 0, 0, nil),
		}, "b"},
		{"a successor that does not exist", []SpecCandidate{
			c("a", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "gone"; m.Weight = 100 }),
			c("c", 1, 0, 0, func(m *WorkSpecMeta) { m.Weight = 1 }),
		}, "a"},
		{"cycle falls back to load", []SpecCandidate{
			c("a", 1, 2, 0, func(m *WorkSpecMeta) { m.Then = "b" }),
			c("b", 1, 0, 0, func(m *WorkSpecMeta) { m.Then = "a" }),
		}, "b"},
		{"preempt only among equal priority", []SpecCandidate{
			c("a", 1, 0, 5, func(m *WorkSpecMeta) { m.Then = "b" }),
			c("b", 1, 0, 1, nil),
		}, "a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i, ok := ChooseWorkSpec(tc.cands, WorkRequest{}, SchedulerOptions{})
			if !ok {
				t.Fatalf("no spec chosen, want %q", tc.want)
			}
			if got := tc.cands[i].Name; got != tc.want {
				t.Errorf("chose %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChooseWorkSpecWeightSequence: with weights 6 and 4 and each choice
// adding a pending unit, ten choices split 6:4 (the Python scheduler test).
func TestChooseWorkSpecWeightSequence(t *testing.T) {
	cands := []SpecCandidate{
		{Name: "a", Meta: meta(func(m *WorkSpecMeta) { m.Weight = 6 }), Available: 1},
		{Name: "b", Meta: meta(func(m *WorkSpecMeta) { m.Weight = 4 }), Available: 1},
	}
	counts := map[string]int{}
	for range 10 {
		i, ok := ChooseWorkSpec(cands, WorkRequest{}, SchedulerOptions{})
		if !ok {
			t.Fatal("nothing chosen")
		}
		cands[i].Pending++
		counts[cands[i].Name]++
	}
	if counts["a"] != 6 || counts["b"] != 4 {
		t.Errorf("counts = %v, want a:6 b:4", counts)
	}
}

func TestWorkCount(t *testing.T) {
	tests := []struct {
		name             string
		getwork, running int
		pending, maxJobs int
		want             int
	}{
		{"default one", 0, 0, 0, 0, 1},
		{"negative max_jobs", 0, 0, 0, -3, 1},
		{"max_jobs", 0, 0, 0, 10, 10},
		{"max_getwork", 3, 0, 0, 10, 3},
		{"max_running", 0, 5, 3, 10, 2},
		{"max_running reached", 0, 5, 5, 10, 0},
		{"max_running exceeded", 0, 5, 7, 10, 0},
		{"all three", 4, 10, 8, 10, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &WorkSpecMeta{MaxGetwork: tc.getwork, MaxRunning: tc.running}
			if got := WorkCount(m, tc.pending, tc.maxJobs); got != tc.want {
				t.Errorf("WorkCount = %d, want %d", got, tc.want)
			}
		})
	}
}
