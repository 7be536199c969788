package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/coordinated/coordinated/coordinate"
)

// The Python daemon's summary page (coordinate/job_httpd.py): one row per
// work spec, one column per status, each count a link to
// ?ws=NAME&wus=STATUS. Python left that link's target unbuilt; here it
// lists the units, a page at a time.

// summaryPage is the most units one listing page shows.
const summaryPage = 100

// maxListOffset bounds offset paging: a status listing is ordered by
// priority, so each page reads offset+page units, and the memory backend
// reads and sorts them with the namespace locked (AVAILABLE and PENDING
// from its heaps up to 65,536; at 1,000,000 a page held every request for
// about a second). Past it, the key search lists any unit.
const maxListOffset = 10_000

type summaryRow struct {
	Name   string
	Counts coordinate.StatusCounts
}

func (s *Server) handleSummary(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Has("ws") {
		s.summaryUnits(w, r)
		return
	}
	st, err := s.stats(r.Context())
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	rows := make([]summaryRow, len(st.Specs))
	for i, sp := range st.Specs {
		rows[i] = summaryRow{Name: sp.Name.Bytes, Counts: sp.Counts}
	}
	s.render(w, http.StatusOK, "summary", map[string]any{"Title": "coordinate daemon summary", "Rows": rows, "Python": true})
}

// summaryUnits lists the units of one spec in one status.
func (s *Server) summaryUnits(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	spec := q.Get("ws")
	status, ok := statusParam(q.Get("wus"))
	if !ok {
		s.fail(w, http.StatusBadRequest, "wus must be a work unit status: 1 to 5, or available, blocked, pending, finished, failed")
		return
	}
	offset := intParam(r, "offset", 0, 0, maxListOffset)
	units, more, err := s.listByStatus(r, spec, status, offset, summaryPage)
	if err != nil {
		s.specError(w, spec, err)
		return
	}
	s.render(w, http.StatusOK, "summary", map[string]any{
		"Title": "coordinate daemon: " + spec + " " + strings.ToUpper(status.String()),
		"Spec":  spec, "Status": status, "StatusName": strings.ToUpper(status.String()),
		"Units": units, "Offset": offset, "Next": offset + len(units), "More": more,
		"Prev": max(0, offset-summaryPage), "Python": true,
	})
}

// listByStatus returns n units of spec in status from offset (priority
// order), and whether more follow.
func (s *Server) listByStatus(r *http.Request, spec string, status coordinate.Status, offset, n int) ([]*coordinate.WorkUnit, bool, error) {
	units, err := s.ns.ListWorkUnits(r.Context(), spec, coordinate.WorkUnitQuery{
		Statuses: []coordinate.Status{status}, Limit: offset + n + 1})
	if err != nil {
		return nil, false, err
	}
	if offset >= len(units) {
		return nil, false, nil
	}
	units = units[offset:]
	more := len(units) > n
	if more {
		units = units[:n]
	}
	// No link to a page past the bound (it would show this one again).
	return units, more && offset+len(units) <= maxListOffset, nil
}

// specError answers a failed read of a spec: 404 for a spec that does not
// exist, 500 otherwise.
func (s *Server) specError(w http.ResponseWriter, spec string, err error) {
	if errors.Is(err, coordinate.ErrNoSuchWorkSpec) {
		s.fail(w, http.StatusNotFound, "no work spec named "+strconv.Quote(spec))
		return
	}
	s.fail(w, http.StatusInternalServerError, "work spec "+strconv.Quote(spec)+": "+err.Error())
}
