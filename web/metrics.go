package web

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coordinated/coordinated/coordinate"
	"github.com/coordinated/coordinated/internal/histo"
)

// otherLabel is the spec (or mode) label under which the values beyond
// the label bound are summed.
const otherLabel = "_other"

// DefaultScrapeTimeout is the default bound on the backend reads of one
// scrape (Options.ScrapeTimeout): well under Prometheus' default
// scrape_timeout of 10 s, so that with the database stalled a scrape
// still arrives, with coordinated_scrape_errors 1 and the figures kept in
// the process (pool, RPC, runtime).
const DefaultScrapeTimeout = 5 * time.Second

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descUnits      = desc("coordinated_work_units", "Work units by spec and status (archived units included, as count_work_units reports them).", "spec", "status")
	descOldest     = desc("coordinated_oldest_available_age_seconds", "Age of the spec's oldest runnable AVAILABLE unit (time since it became available); absent when none or not tracked by the backend.", "spec")
	descPaused     = desc("coordinated_work_spec_paused", "1 when the work spec is paused.", "spec")
	descContinuous = desc("coordinated_work_spec_continuous", "1 when the work spec is continuous.", "spec")
	descSpecs      = desc("coordinated_work_specs", "Work specs in the namespace.")
	descEvents     = map[string]*prometheus.Desc{}
	descWorkers    = desc("coordinated_workers", "Live workers by mode (the heartbeat's mode when it is a string).", "mode")
	descStalled    = desc("coordinated_stalled_groups", "Unit groups stalled now: runnable units and no progress for the stall timeout.")
	descScrapeErr  = desc("coordinated_scrape_errors", "1 when part of this scrape could not be read from the backend (see the log).")
	descConns      = desc("coordinated_connections_open", "Open CBOR-RPC connections.")

	descJRecords  = desc("coordinated_journal_records_total", "Records appended to the journal.")
	descJBytes    = desc("coordinated_journal_bytes_total", "Bytes appended to the journal, framing included.")
	descJGroups   = desc("coordinated_journal_groups_total", "Group commits that wrote something.")
	descJFsyncs   = desc("coordinated_journal_fsyncs_total", "fsyncs of journal segment files.")
	descJGroupRec = desc("coordinated_journal_group_records", "Records per group commit.")
	descJFsyncSec = desc("coordinated_journal_fsync_seconds", "Duration of a group commit's fsync.")
	descSnapSec   = desc("coordinated_snapshot_seconds", "Duration of a snapshot (pause plus write).")

	descPGAcquired = desc("coordinated_pg_pool_acquired_conns", "PostgreSQL pool connections in use.")
	descPGIdle     = desc("coordinated_pg_pool_idle_conns", "PostgreSQL pool connections idle.")
	descPGTotal    = desc("coordinated_pg_pool_total_conns", "PostgreSQL pool connections open.")
	descPGMax      = desc("coordinated_pg_pool_max_conns", "PostgreSQL pool size limit.")
	descPGAcquires = desc("coordinated_pg_pool_acquires_total", "Connections acquired from the PostgreSQL pool.")
	descPGEmpty    = desc("coordinated_pg_pool_empty_acquires_total", "Acquires that had to wait for a connection.")
	descPGWait     = desc("coordinated_pg_pool_acquire_seconds_total", "Time spent acquiring PostgreSQL connections.")
	descPGBatch    = desc("coordinated_pg_commit_batch_requests", "Requests per PostgreSQL committer transaction.")
)

// eventNames are the SpecEvents counters, as metric name parts.
var eventNames = []string{"added", "leased", "finished", "failed", "retried", "expired"}

func init() {
	for _, e := range eventNames {
		descEvents[e] = desc("coordinated_work_units_"+e+"_total", "Work units "+e+" in the spec since the daemon started, by this daemon (sum over the daemons sharing a PostgreSQL database).", "spec")
	}
}

func eventValues(ev *coordinate.SpecEvents) []uint64 {
	return []uint64{ev.Added, ev.Leased, ev.Finished, ev.Failed, ev.Retried, ev.Expired}
}

// collector reads the queue's state at each scrape: O(work specs + live
// workers), never a scan of units.
type collector struct{ s *Server }

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ScrapeTimeout)
	defer cancel()
	failed := 0.0
	if err := s.collectSpecs(ctx, ch); err != nil {
		s.log.Warn("metrics: reading work specs", "error", err)
		failed = 1
	}
	if err := s.collectWorkers(ctx, ch); err != nil {
		s.log.Warn("metrics: reading workers and groups", "error", err)
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.GaugeValue, failed)
	if f := s.opts.ConnectionsOpen; f != nil {
		ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(f()))
	}
	switch b := s.opts.Backend.(type) {
	case journaled:
		st := b.JournalStats()
		ch <- prometheus.MustNewConstMetric(descJRecords, prometheus.CounterValue, float64(st.Records))
		ch <- prometheus.MustNewConstMetric(descJBytes, prometheus.CounterValue, float64(st.Bytes))
		ch <- prometheus.MustNewConstMetric(descJGroups, prometheus.CounterValue, float64(st.Flushes))
		ch <- prometheus.MustNewConstMetric(descJFsyncs, prometheus.CounterValue, float64(st.Syncs))
		constHistogram(ch, descJGroupRec, st.GroupRecords)
		constHistogram(ch, descJFsyncSec, st.SyncSeconds)
		if h := b.SnapshotSeconds(); h != nil {
			constHistogram(ch, descSnapSec, h.Snapshot())
		}
	case pooled:
		st := b.PoolStats()
		ch <- prometheus.MustNewConstMetric(descPGAcquired, prometheus.GaugeValue, float64(st.AcquiredConns()))
		ch <- prometheus.MustNewConstMetric(descPGIdle, prometheus.GaugeValue, float64(st.IdleConns()))
		ch <- prometheus.MustNewConstMetric(descPGTotal, prometheus.GaugeValue, float64(st.TotalConns()))
		ch <- prometheus.MustNewConstMetric(descPGMax, prometheus.GaugeValue, float64(st.MaxConns()))
		ch <- prometheus.MustNewConstMetric(descPGAcquires, prometheus.CounterValue, float64(st.AcquireCount()))
		ch <- prometheus.MustNewConstMetric(descPGEmpty, prometheus.CounterValue, float64(st.EmptyAcquireCount()))
		ch <- prometheus.MustNewConstMetric(descPGWait, prometheus.CounterValue, st.AcquireDuration().Seconds())
		constHistogram(ch, descPGBatch, b.CommitBatchSizes().Snapshot())
	}
}

// collectSpecs exports the per-spec figures, folding specs beyond the
// label bound into "_other".
func (s *Server) collectSpecs(ctx context.Context, ch chan<- prometheus.Metric) error {
	st, err := s.stats(ctx)
	if err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(descSpecs, prometheus.GaugeValue, float64(len(st.Specs)))
	now := s.clock.Now()
	specs := st.Specs
	var other *coordinate.SpecStats
	var folded []coordinate.SpecStats
	if len(specs) > s.opts.MaxSpecLabels {
		folded = specs[s.opts.MaxSpecLabels:]
		specs = specs[:s.opts.MaxSpecLabels]
		other = &coordinate.SpecStats{Name: coordinate.Name{Bytes: otherLabel}}
		for _, sp := range folded {
			foldSpec(other, sp)
		}
	}
	// Counted every scrape, "_other" folded or not, so a spec that leaves
	// it is known next time; its counters never fall (otherEvents).
	if ev, ok := s.other.fold(specs, folded); ok {
		other.Events = &ev
	}
	emit := func(sp *coordinate.SpecStats, name string, flags bool) {
		for status := coordinate.StatusAvailable; status <= coordinate.StatusFailed; status++ {
			ch <- prometheus.MustNewConstMetric(descUnits, prometheus.GaugeValue, float64(sp.Counts[status]), name, status.String())
		}
		if !sp.OldestAvailable.IsZero() {
			ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, max(0, now.Sub(sp.OldestAvailable).Seconds()), name)
		}
		if sp.Events != nil {
			for i, v := range eventValues(sp.Events) {
				ch <- prometheus.MustNewConstMetric(descEvents[eventNames[i]], prometheus.CounterValue, float64(v), name)
			}
		}
		if flags {
			ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, boolValue(sp.Paused), name)
			ch <- prometheus.MustNewConstMetric(descContinuous, prometheus.GaugeValue, boolValue(sp.Continuous), name)
		}
	}
	for i := range specs {
		emit(&specs[i], specLabel(specs[i].Name.Bytes), true)
	}
	if other != nil {
		emit(other, otherLabel, false)
	}
	return nil
}

// specLabel is a spec's name as a label value. Prometheus label values
// must be UTF-8 (the client fails the whole scrape otherwise), and a spec
// name is any byte string: one that is not UTF-8 is shown in hex as the
// dashboard shows such bytes in data, h'...', which no two names share.
// So is a spec named "_other", which would otherwise give the folded
// specs' series a duplicate and fail the scrape.
func specLabel(name string) string {
	if name == otherLabel {
		return hexText(name)
	}
	return bytesText(name)
}

// foldSpec adds sp's gauges into the "_other" aggregate o (its event
// counters are otherEvents').
func foldSpec(o *coordinate.SpecStats, sp coordinate.SpecStats) {
	for i, n := range sp.Counts {
		o.Counts[i] += n
	}
	if !sp.OldestAvailable.IsZero() && (o.OldestAvailable.IsZero() || sp.OldestAvailable.Before(o.OldestAvailable)) {
		o.OldestAvailable = sp.OldestAvailable
	}
}

// maxModeLabels bounds the mode label of the worker gauge.
const maxModeLabels = 20

func (s *Server) collectWorkers(ctx context.Context, ch chan<- prometheus.Metric) error {
	workers, err := s.ns.Workers(ctx)
	if err != nil {
		return err
	}
	byMode := map[string]int{}
	for _, w := range workers {
		m := modeLabel(w.Mode)
		if _, seen := byMode[m]; !seen && len(byMode) >= maxModeLabels {
			m = otherLabel
		}
		byMode[m]++
	}
	for m, n := range byMode {
		ch <- prometheus.MustNewConstMetric(descWorkers, prometheus.GaugeValue, float64(n), m)
	}
	stalled, err := s.ns.StalledGroups(ctx)
	if err != nil {
		return err
	}
	ch <- prometheus.MustNewConstMetric(descStalled, prometheus.GaugeValue, float64(len(stalled)))
	return nil
}

// stats reads the namespace's per-spec figures (O(work specs)).
func (s *Server) stats(ctx context.Context) (*coordinate.NamespaceStats, error) {
	r, ok := s.ns.(coordinate.StatsReader)
	if !ok {
		return nil, fmt.Errorf("the %T namespace offers no statistics (coordinate.StatsReader)", s.ns)
	}
	return r.Stats(ctx)
}

func constHistogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h histo.Snapshot) {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, b := range h.Bounds {
		buckets[b] = h.Cumulative[i]
	}
	ch <- prometheus.MustNewConstHistogram(d, h.Count, h.Sum, buckets)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
