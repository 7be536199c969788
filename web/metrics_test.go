package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/coordinated/coordinated/coordinate"
)

// scrape fetches /metrics and parses it with the Prometheus text parser.
func (f *fixture) scrape() map[string]*dto.MetricFamily {
	f.t.Helper()
	resp, err := http.Get(f.http.URL + "/metrics")
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("/metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		f.t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// value finds one sample by name and labels (name=value pairs); ok is
// false when there is none. Histograms report their count.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func (f *fixture) want(fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	f.t.Helper()
	got, ok := value(fams, name, labels...)
	if !ok {
		f.t.Errorf("%s%v: missing", name, labels)
	} else if got != want {
		f.t.Errorf("%s%v = %g, want %g", name, labels, got, want)
	}
}

// knownSequence runs the same operations on any backend: spec a gets 5
// units, 2 leased (one finished, one failed then retried), spec b is paused
// and continuous-capable, one worker heartbeats in mode "run".
func (f *fixture) knownSequence() {
	f.t.Helper()
	ctx, ns := f.ctx, f.ns
	f.spec(map[string]any{"name": "a"})
	f.spec(map[string]any{"name": "b", "continuous": true})
	f.add("a", "1", "2", "3", "4", "5")
	p := 10.0
	if _, err := ns.PrioritizeWorkUnits(ctx, "a", []string{"1", "2"}, &p, 0); err != nil {
		f.t.Fatal(err)
	}
	as, err := ns.GetWork(ctx, coordinate.WorkRequest{Worker: coordinate.Name{Bytes: "w", Text: true}, LeaseTime: time.Minute, MaxJobs: 2, WorkSpecs: []string{"a"}})
	if err != nil || len(as) != 2 {
		f.t.Fatalf("GetWork: %d units, %v", len(as), err)
	}
	if err := ns.UpdateWorkUnit(ctx, "a", "1", coordinate.WorkUnitUpdate{Status: coordinate.StatusFinished}); err != nil {
		f.t.Fatal(err)
	}
	if err := ns.UpdateWorkUnit(ctx, "a", "2", coordinate.WorkUnitUpdate{Status: coordinate.StatusFailed}); err != nil {
		f.t.Fatal(err)
	}
	if err := ns.UpdateWorkUnit(ctx, "a", "2", coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}); err != nil {
		f.t.Fatal(err)
	}
	if err := ns.ControlWorkSpec(ctx, "b", coordinate.WorkSpecControl{Paused: ptr(true)}); err != nil {
		f.t.Fatal(err)
	}
	if err := ns.WorkerHeartbeat(ctx, coordinate.Heartbeat{Worker: coordinate.Name{Bytes: "w", Text: true},
		Mode: coordinate.TextData("run"), Data: coordinate.EmptyMap, Expire: time.Hour}); err != nil {
		f.t.Fatal(err)
	}
	f.rpcCounts("a")
	f.rpcCounts("a")
	if _, err := f.rpc.Call("no_such_method"); err == nil || !strings.Contains(err.Error(), "no such method") {
		f.t.Fatalf("unknown method answered %v, want a no-such-method error", err)
	}
}

func ptr[T any](v T) *T { return &v }

// checkKnown checks what every backend reports after knownSequence.
func (f *fixture) checkKnown(fams map[string]*dto.MetricFamily) {
	f.t.Helper()
	f.want(fams, 4, "coordinated_work_units", "spec", "a", "status", "available")
	f.want(fams, 1, "coordinated_work_units", "spec", "a", "status", "finished")
	f.want(fams, 0, "coordinated_work_units", "spec", "a", "status", "failed")
	f.want(fams, 0, "coordinated_work_units", "spec", "b", "status", "available")
	f.want(fams, 1, "coordinated_work_spec_paused", "spec", "b")
	f.want(fams, 0, "coordinated_work_spec_paused", "spec", "a")
	f.want(fams, 2, "coordinated_work_specs")
	f.want(fams, 1, "coordinated_workers", "mode", "run")
	f.want(fams, 0, "coordinated_stalled_groups")
	f.want(fams, 0, "coordinated_scrape_errors")
	f.want(fams, 2, "coordinated_rpc_duration_seconds", "method", "count_work_units")
	f.want(fams, 1, "coordinated_rpc_duration_seconds", "method", unknownMethod)
	f.want(fams, 1, "coordinated_rpc_errors_total", "method", unknownMethod)
	if n, _ := value(fams, "coordinated_rpc_errors_total", "method", "count_work_units"); n != 0 {
		f.t.Errorf("count_work_units counted %g failures", n)
	}
	f.want(fams, 5, "coordinated_work_units_added_total", "spec", "a")
	f.want(fams, 2, "coordinated_work_units_leased_total", "spec", "a")
	f.want(fams, 1, "coordinated_work_units_finished_total", "spec", "a")
	f.want(fams, 1, "coordinated_work_units_failed_total", "spec", "a")
	f.want(fams, 1, "coordinated_work_units_retried_total", "spec", "a")
	f.want(fams, 0, "coordinated_work_units_expired_total", "spec", "a")
	f.want(fams, 0, "coordinated_work_units_added_total", "spec", "b")
	if age, ok := value(fams, "coordinated_oldest_available_age_seconds", "spec", "a"); !ok || age < 0 || age > 60 {
		f.t.Errorf("oldest available age of a = %g (present %v), want a few seconds", age, ok)
	}
	if _, ok := value(fams, "coordinated_oldest_available_age_seconds", "spec", "b"); ok {
		f.t.Errorf("oldest available age reported for b, which has no units")
	}
}

func TestMetricsMemory(t *testing.T) {
	f := newFixture(t, fixtureOpts{dataDir: t.TempDir()})
	f.knownSequence()
	fams := f.scrape()
	f.checkKnown(fams)
	// Every change above was journaled and waited for.
	if n, _ := value(fams, "coordinated_journal_records_total"); n < 8 {
		t.Errorf("journal records = %g, want at least 8", n)
	}
	groups, _ := value(fams, "coordinated_journal_groups_total")
	if n, _ := value(fams, "coordinated_journal_group_records"); n != groups || n == 0 {
		t.Errorf("group-size histogram counts %g groups, the counter %g", n, groups)
	}
	if _, ok := value(fams, "coordinated_journal_fsync_seconds"); !ok {
		t.Errorf("no fsync histogram")
	}
}

func TestMetricsPostgres(t *testing.T) {
	f := newFixture(t, fixtureOpts{postgres: true})
	f.knownSequence()
	fams := f.scrape()
	f.checkKnown(fams)
	if n, ok := value(fams, "coordinated_pg_pool_total_conns"); !ok || n < 1 {
		t.Errorf("pool connections = %g (present %v), want at least 1", n, ok)
	}
	if n, _ := value(fams, "coordinated_pg_commit_batch_requests"); n < 1 {
		t.Errorf("committer batches = %g, want at least one (the lease and the finishes)", n)
	}

}

// Specs beyond the label bound are summed under _other.
func TestMetricsSpecLabelBound(t *testing.T) {
	f := newFixture(t, fixtureOpts{labels: 2})
	for _, s := range []string{"a", "b", "c", "d"} {
		f.spec(map[string]any{"name": s})
	}
	f.add("a", "1")
	f.add("c", "1", "2")
	f.add("d", "1", "2", "3")
	fams := f.scrape()
	f.want(fams, 1, "coordinated_work_units", "spec", "a", "status", "available")
	f.want(fams, 5, "coordinated_work_units", "spec", otherLabel, "status", "available")
	f.want(fams, 5, "coordinated_work_units_added_total", "spec", otherLabel)
	if _, ok := value(fams, "coordinated_work_units", "spec", "c"); ok {
		t.Errorf("spec c has its own label beyond the bound of 2")
	}
	var specLabels int
	for _, m := range fams["coordinated_work_units"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "spec" && l.GetValue() != "" && strings.Contains("ab"+otherLabel, l.GetValue()) {
				specLabels++
			}
		}
	}
	if specLabels != 3*5 {
		t.Errorf("%d spec/status series, want 15 (a, b, _other)", specLabels)
	}
}

// The "_other" series' counters never fall, whatever moves in and out of
// it: a labelled spec deleted lets a folded one have its own label again
// (its past stays in "_other"), new units of a folded spec add, and a new
// folded spec adds what it has. Summed afresh at each scrape, "_other"
// fell from 3 to 1 here, which Prometheus reads as a counter reset.
func TestOtherCountersNeverFall(t *testing.T) {
	f := newFixture(t, fixtureOpts{labels: 1})
	for _, s := range []string{"a", "b", "c"} {
		f.spec(map[string]any{"name": s})
	}
	f.add("b", "1", "2")
	f.add("c", "1")
	added := func() float64 {
		t.Helper()
		v, ok := value(f.scrape(), "coordinated_work_units_added_total", "spec", otherLabel)
		if !ok {
			t.Fatal("no _other series")
		}
		return v
	}
	if v := added(); v != 3 {
		t.Fatalf("_other added %g, want 3 (b and c folded)", v)
	}
	f.call("del_work_spec", "a") // b gets its own label
	if v := added(); v != 3 {
		t.Errorf("_other added %g after b left it, want 3", v)
	}
	f.add("c", "2", "3")
	if v := added(); v != 5 {
		t.Errorf("_other added %g after two more units of c, want 5", v)
	}
	f.spec(map[string]any{"name": "d"})
	f.add("d", "1", "2", "3", "4")
	if v := added(); v != 9 {
		t.Errorf("_other added %g after a new spec d of 4 units, want 9", v)
	}
}

// A spec whose name is not UTF-8 (a byte string from a Python 2 client)
// and a long worker mode cut inside a character still give a scrape:
// Prometheus label values must be UTF-8, and the client refused the whole
// scrape (500) when one was not.
func TestMetricsLabelsUTF8(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	f.call("set_work_spec", map[string]any{"name": []byte{0xff, 'a'}})
	f.call("set_work_spec", map[string]any{"name": []byte{0xfe, 'a'}})
	f.spec(map[string]any{"name": "ok"})
	f.add("ok", "1")
	mode := strings.Repeat("m", 63) + "é"
	if err := f.ns.WorkerHeartbeat(f.ctx, coordinate.Heartbeat{Worker: coordinate.Name{Bytes: "w", Text: true},
		Mode: coordinate.TextData(mode), Data: coordinate.EmptyMap, Expire: time.Hour}); err != nil {
		t.Fatal(err)
	}
	fams := f.scrape()
	f.want(fams, 1, "coordinated_work_units", "spec", "ok", "status", "available")
	f.want(fams, 0, "coordinated_work_units", "spec", "h'ff61'", "status", "available")
	f.want(fams, 0, "coordinated_work_units", "spec", "h'fe61'", "status", "available")
	f.want(fams, 1, "coordinated_workers", "mode", strings.Repeat("m", 63))
	f.want(fams, 0, "coordinated_scrape_errors")
}

// stalled is a namespace whose database stopped answering: Stats waits
// for its context to end.
type stalled struct{ coordinate.Namespace }

func (stalled) Stats(ctx context.Context) (*coordinate.NamespaceStats, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// With the database stalled a scrape still answers once ScrapeTimeout has
// passed, before Prometheus gives up on it (a scrape that ran past
// Prometheus' scrape_timeout came back as a failed target, the in-process
// figures and coordinated_scrape_errors lost with it): it says that part
// of it failed and carries the figures it did not need the database for.
func TestMetricsWhileStalled(t *testing.T) {
	f := newFixture(t, fixtureOpts{scrapeTimeout: 20 * time.Millisecond})
	f.spec(map[string]any{"name": "a"})
	f.web.ns = stalled{f.ns}
	fams := f.scrape()
	f.want(fams, 1, "coordinated_scrape_errors")
	if _, ok := value(fams, "coordinated_work_units", "spec", "a", "status", "available"); ok {
		t.Error("coordinated_work_units reported although Stats never answered")
	}
	for _, name := range []string{"coordinated_journal_records_total", "go_goroutines", "process_cpu_seconds_total"} {
		if fams[name] == nil {
			t.Errorf("%s missing from the stalled scrape", name)
		}
	}
}

func TestScrapeTimeoutDefault(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	if got := f.web.opts.ScrapeTimeout; got != DefaultScrapeTimeout || DefaultScrapeTimeout != 5*time.Second {
		t.Errorf("ScrapeTimeout defaults to %v (DefaultScrapeTimeout %v), want 5s", got, DefaultScrapeTimeout)
	}
}

// A spec named "_other" does not collide with the series of the specs
// beyond the label bound (a duplicate series failed every scrape).
func TestMetricsSpecNamedOther(t *testing.T) {
	f := newFixture(t, fixtureOpts{labels: 1})
	for _, s := range []string{otherLabel, "a", "b"} {
		f.spec(map[string]any{"name": s})
	}
	f.add(otherLabel, "1")
	f.add("a", "1", "2")
	fams := f.scrape()
	f.want(fams, 1, "coordinated_work_units", "spec", "h'5f6f74686572'", "status", "available")
	f.want(fams, 2, "coordinated_work_units", "spec", otherLabel, "status", "available")
}
