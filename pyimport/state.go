package pyimport

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// State is the Python daemon's queue as read from its files: every work
// spec by name bytes.
type State struct {
	Specs map[string]*Spec
}

// Spec is one Python work spec (job_server.py's WorkSpec state).
type Spec struct {
	Name       coordinate.Name
	Definition coordinate.Data // the work spec dictionary, verbatim
	Weight     int
	Paused     bool // status PAUSED (2)
	Continuous bool
	// Interval is the continuous interval in seconds; 0 for Python's None.
	Interval float64
	// NextContinuous is the earliest time (Unix seconds) of the next
	// continuous unit; 0 for none.
	NextContinuous float64
	// MaxRunning is the pending-unit limit as WorkSpecMeta.MaxRunning
	// encodes it (coordinate.EncodeMaxRunning); 0 for Python's None.
	MaxRunning int
	// Archived counts units dropped by retention, by status.
	Archived map[coordinate.Status]int
	Units    map[string]*Unit
}

// Unit is one Python work unit (server_work_unit.py's WorkUnit).
type Unit struct {
	Key      coordinate.Name
	Data     coordinate.Data
	Status   coordinate.Status
	Priority float64
	// LeaseTime is Python's lease_time in Unix seconds: the lease expiry of
	// a PENDING unit, the completion time of a FINISHED or FAILED one; 0
	// for None.
	LeaseTime float64
	Worker    *coordinate.Name
}

// SpecNames lists the spec names in byte order.
func (s *State) SpecNames() []string {
	names := make([]string, 0, len(s.Specs))
	for n := range s.Specs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Imported converts a spec to what Namespace.ImportWorkSpec stores. Python
// kept the control settings it derived from the definition, changed by
// control_work_spec since; they are all given as Control.
func (sp *Spec) Imported() *coordinate.ImportedWorkSpec {
	paused, cont := sp.Paused, sp.Continuous
	weight, maxRunning := sp.Weight, sp.MaxRunning
	interval := secondsDuration(sp.Interval)
	in := &coordinate.ImportedWorkSpec{
		Definition: sp.Definition,
		Control: coordinate.WorkSpecControl{
			Paused: &paused, Continuous: &cont, Interval: &interval,
			MaxRunning: &maxRunning, Weight: &weight,
		},
		NextContinuous: unixTime(sp.NextContinuous),
		Archived:       make(map[coordinate.Status]int, len(sp.Archived)),
		Units:          make([]coordinate.ImportedWorkUnit, 0, len(sp.Units)),
	}
	for st, n := range sp.Archived {
		in.Archived[st] = n
	}
	keys := make([]string, 0, len(sp.Units))
	for k := range sp.Units {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		u := sp.Units[k]
		in.Units = append(in.Units, coordinate.ImportedWorkUnit{
			Key: u.Key, Data: u.Data, Status: u.Status, Priority: u.Priority,
			Expiration: unixTime(u.LeaseTime), Worker: u.Worker,
		})
	}
	return in
}

// Counts returns the spec's units by status, archived ones included, as
// count_work_units reports them.
func (sp *Spec) Counts() map[coordinate.Status]int {
	out := make(map[coordinate.Status]int)
	for st, n := range sp.Archived {
		if n > 0 {
			out[st] += n
		}
	}
	for _, u := range sp.Units {
		out[u.Status]++
	}
	return out
}

// unixTime converts Python's float Unix seconds (0 = None) to a time,
// rounded to the microsecond Python's float carries.
func unixTime(sec float64) time.Time {
	if sec == 0 {
		return time.Time{}
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1e6))*1e3).UTC()
}

// unixSeconds is the inverse of unixTime.
func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// secondsDuration converts seconds to a Duration; negative becomes 0.
func secondsDuration(sec float64) time.Duration {
	if !(sec > 0) {
		return 0
	}
	if sec >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(sec * 1e9)
}

// FormatError is bad input: a file that is not what the Python daemon
// writes, truncated, or holding something this reader does not know.
type FormatError struct {
	File   string
	Offset int64 // byte offset (in the uncompressed stream) of the item at fault
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: at byte %d: %s", e.File, e.Offset, e.Msg)
}
