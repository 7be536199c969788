package coordinate

import (
	"fmt"
	"testing"
)

// BenchmarkChooseWorkSpec100: the choice among 100 specs of weights 1 to
// 100 with available units and no then (the weighted workload of
// cmd/coordbench), as each get_work makes it.
func BenchmarkChooseWorkSpec100(b *testing.B) {
	metas := make([]WorkSpecMeta, 100)
	cands := make([]SpecCandidate, 100)
	for i := range cands {
		metas[i] = WorkSpecMeta{Weight: i + 1, ThenPreempts: true}
		cands[i] = SpecCandidate{Name: fmt.Sprintf("weighted_%03d", i), Meta: &metas[i],
			Pending: i % 7, Available: 100}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ChooseWorkSpec(cands, WorkRequest{}, SchedulerOptions{}); !ok {
			b.Fatal("no choice")
		}
	}
}

// BenchmarkChooseWorkSpecChain: the choice between the two specs of the
// chain workload (a -> b, both with available units), where the
// then_preempts rule runs on every get_work.
func BenchmarkChooseWorkSpecChain(b *testing.B) {
	ma := WorkSpecMeta{Weight: 20, ThenPreempts: true, Then: "b"}
	mb := WorkSpecMeta{Weight: 20, ThenPreempts: true}
	cands := []SpecCandidate{
		{Name: "a", Meta: &ma, Pending: 3, Available: 100},
		{Name: "b", Meta: &mb, Pending: 5, Available: 100},
	}
	b.ReportAllocs()
	for b.Loop() {
		if i, ok := ChooseWorkSpec(cands, WorkRequest{}, SchedulerOptions{}); !ok || i != 1 {
			b.Fatal("b not chosen")
		}
	}
}
