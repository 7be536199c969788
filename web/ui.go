package web

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/coordinated/coordinated/coordinate"
)

// The dashboard's pages under /ui/. Every page works without JavaScript;
// actions are forms posting to /ui/action (actions.go).

// uiPage is the default number of units a spec page lists; ?n= changes it
// up to uiMaxPage.
const (
	uiPage    = 100
	uiMaxPage = 1000
)

// page is what every dashboard page template gets.
type page struct {
	Title   string
	Python  bool
	Actions bool   // actions are enabled
	CSRF    string // token the action forms carry
	Return  string // this page, where an action redirects back to
	Flash   string // what the action that led here did
	Data    any
}

func (s *Server) page(r *http.Request, title string, data any) page {
	back := *r.URL
	q := back.Query()
	q.Del("flash")
	back.RawQuery = q.Encode()
	return page{Title: title, Actions: s.opts.Actions, CSRF: s.csrf, Return: back.RequestURI(),
		Flash: r.URL.Query().Get("flash"), Data: data}
}

type specRow struct {
	coordinate.SpecStats
	Rate []int
}

func (s *Server) handleSpecs(w http.ResponseWriter, r *http.Request) {
	st, err := s.stats(r.Context())
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	rows := make([]specRow, len(st.Specs))
	var total coordinate.StatusCounts
	for i, sp := range st.Specs {
		rows[i] = specRow{SpecStats: sp, Rate: s.history.rate(sp.Name.Bytes)}
		for j, n := range sp.Counts {
			total[j] += n
		}
	}
	stalled, err := s.ns.StalledGroups(r.Context())
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.render(w, http.StatusOK, "specs", s.page(r, "Work specs", map[string]any{
		"Specs": rows, "Total": total, "Stalled": len(stalled), "Now": s.clock.Now()}))
}

func (s *Server) handleSpec(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	name := q.Get("name")
	ctx := r.Context()
	ws, err := s.ns.WorkSpec(ctx, name)
	if err != nil {
		s.specError(w, name, err)
		return
	}
	counts, err := s.ns.CountWorkUnits(ctx, name)
	if err != nil {
		s.specError(w, name, err)
		return
	}
	var c coordinate.StatusCounts
	for st, n := range counts {
		if st.Valid() {
			c[st] = n
		}
	}
	n := intParam(r, "n", uiPage, 1, uiMaxPage)
	prefix := q.Get("prefix")
	status, byStatus := statusParam(q.Get("status"))
	if !q.Has("status") && !q.Has("prefix") {
		// What is queued, best first: cheap whatever the spec's size
		// (a listing by key may scan the spec).
		status, byStatus = coordinate.StatusAvailable, true
	}
	data := map[string]any{"Spec": ws, "Definition": dataText(ws.Definition), "Counts": c,
		"Prefix": prefix, "N": n, "Now": s.clock.Now()}
	var units []*coordinate.WorkUnit
	var more bool
	if byStatus && prefix == "" {
		offset := intParam(r, "offset", 0, 0, maxListOffset)
		units, more, err = s.listByStatus(r, name, status, offset, n)
		data["Status"], data["Offset"] = status, offset
		data["Next"], data["Prev"] = offset+len(units), max(0, offset-n)
	} else {
		// By key, from the prefix (or a cursor past it), while keys match.
		start := q.Get("after")
		if start < prefix {
			start = prefix
		}
		// Start is inclusive: the cursor's own unit comes back first and
		// is dropped below, so one more is asked for to tell whether a
		// page follows.
		limit := n + 1
		if q.Get("after") != "" {
			limit++
		}
		units, err = s.ns.ListWorkUnits(ctx, name, coordinate.WorkUnitQuery{Start: start, Limit: limit})
		keep := units[:0]
		for _, u := range units {
			if strings.HasPrefix(u.Key.Bytes, prefix) && (q.Get("after") == "" || u.Key.Bytes > q.Get("after")) {
				keep = append(keep, u)
			}
		}
		units = keep
		if more = len(units) > n; more {
			units = units[:n]
		}
		if more {
			data["After"] = units[len(units)-1].Key.Bytes
		}
	}
	if err != nil {
		s.specError(w, name, err)
		return
	}
	data["Units"], data["More"] = units, more
	s.render(w, http.StatusOK, "spec", s.page(r, "Work spec "+name, data))
}

// unitView is one unit as the unit page shows it.
type unitView struct {
	*coordinate.WorkUnit
	DataText  string
	Traceback string
	Outputs   []string
	Then      string
}

func (s *Server) handleUnit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	spec, key := q.Get("spec"), q.Get("key")
	ctx := r.Context()
	ws, err := s.ns.WorkSpec(ctx, spec)
	if err != nil {
		s.specError(w, spec, err)
		return
	}
	us, err := s.ns.GetWorkUnits(ctx, spec, []string{key})
	if err != nil {
		s.specError(w, spec, err)
		return
	}
	if len(us) != 1 || us[0] == nil {
		s.fail(w, http.StatusNotFound, "work spec "+strconv.Quote(spec)+" has no unit "+strconv.Quote(key))
		return
	}
	u := us[0]
	v := unitView{WorkUnit: u, DataText: dataText(u.Data), Traceback: traceback(u.Data), Then: ws.Meta.Then}
	if ws.Meta.Then != "" {
		v.Outputs = outputs(u.Data)
	}
	s.render(w, http.StatusOK, "unit", s.page(r, "Work unit "+key, map[string]any{"Unit": v, "Now": s.clock.Now()}))
}

// workerRow is one live worker with the units it holds.
type workerRow struct {
	*coordinate.WorkerInfo
	Mode  string
	Units []coordinate.ChildWorkUnit
}

// workersPage is how many workers one page shows (each costs a read of
// its units).
const workersPage = 100

func (s *Server) handleWorkers(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	workers, err := s.ns.Workers(ctx)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	byMode := map[string]int{}
	for _, wk := range workers {
		byMode[modeLabel(wk.Mode)]++
	}
	after := r.URL.Query().Get("after")
	shown := workers[:0:0]
	for _, wk := range workers {
		if wk.ID.Bytes > after || after == "" {
			shown = append(shown, wk)
		}
	}
	next := ""
	if len(shown) > workersPage {
		shown = shown[:workersPage]
		next = shown[workersPage-1].ID.Bytes
	}
	lister, _ := s.ns.(coordinate.WorkerUnitLister)
	rows := make([]workerRow, len(shown))
	for i, wk := range shown {
		rows[i] = workerRow{WorkerInfo: wk, Mode: modeText(wk.Mode)}
		if lister == nil {
			continue
		}
		units, err := lister.WorkerUnits(ctx, wk.ID.Bytes)
		if err != nil && !errors.Is(err, coordinate.ErrNoSuchWorker) { // it may expire meanwhile
			s.fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		rows[i].Units = units
	}
	s.render(w, http.StatusOK, "workers", s.page(r, "Workers", map[string]any{"Workers": rows, "Total": len(workers),
		"ByMode": byMode, "Next": next, "Now": s.clock.Now()}))
}

func (s *Server) handleGroups(w http.ResponseWriter, r *http.Request) {
	stalled, err := s.ns.StalledGroups(r.Context())
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.render(w, http.StatusOK, "groups", s.page(r, "Groups", map[string]any{"Stalled": stalled, "Now": s.clock.Now()}))
}

// groupGraphLimit is the most units a group's graph draws.
const groupGraphLimit = 500

func (s *Server) handleGroup(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	ctx := r.Context()
	gs, err := s.ns.GroupStatus(ctx, name)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	data := map[string]any{"Group": gs, "Now": s.clock.Now()}
	if l, ok := s.ns.(coordinate.GroupLister); ok {
		units, more, err := l.GroupUnits(ctx, name, groupGraphLimit)
		if err != nil {
			s.fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		g := layoutGraph(units)
		data["Graph"], data["More"], data["Units"] = g.svg(), more, units
		data["FailedRoots"] = g.failedRoots
	}
	s.render(w, http.StatusOK, "group", s.page(r, "Group "+name, data))
}
