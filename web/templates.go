package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coordinated/coordinated/coordinate"
)

// templates holds each page parsed together with the shared layout.
type templates struct {
	pages map[string]*template.Template
}

var pageNames = []string{"summary", "specs", "spec", "unit", "workers", "groups", "group", "message"}

func parseTemplates() *templates {
	funcs := template.FuncMap{
		"statuses": func() []coordinate.Status { return allStatuses },
		"upper":    func(s coordinate.Status) string { return strings.ToUpper(s.String()) },
		"count":    func(c coordinate.StatusCounts, s coordinate.Status) int { return c[s] },
		"time":     fmtTime,
		"ago":      fmtAgo,
		"query":    queryString,
		"target":   formTarget,
		"sparkline": func(r []int) template.HTML {
			return sparkline(r)
		},
		"name": func(n coordinate.Name) string { return n.Bytes },
		"add":  func(a, b int) int { return a + b },
	}
	t := &templates{pages: map[string]*template.Template{}}
	for _, p := range pageNames {
		t.pages[p] = template.Must(template.New(p).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+p+".html"))
	}
	return t
}

var allStatuses = []coordinate.Status{coordinate.StatusAvailable, coordinate.StatusBlocked,
	coordinate.StatusPending, coordinate.StatusFinished, coordinate.StatusFailed}

// render executes a page into a buffer first, so that a template error
// becomes a clean 500 instead of half a page.
func (s *Server) render(w http.ResponseWriter, code int, page string, data any) {
	var buf bytes.Buffer
	if err := s.pages.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		s.log.Error("web: rendering page", "page", page, "error", err)
		http.Error(w, "internal error rendering "+page, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page.
func (s *Server) fail(w http.ResponseWriter, code int, msg string) {
	s.render(w, code, "message", map[string]any{"Title": http.StatusText(code), "Message": msg})
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func fmtAgo(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t).Round(time.Second)
	if d < 0 {
		return "in " + (-d).String()
	}
	return d.String() + " ago"
}

// queryString builds "?k=v&..." from alternating keys and values,
// leaving out empty values and an offset of 0 (the default). Any other
// value is kept, "0" included: it may be a unit's key or a spec's name.
func queryString(kv ...any) template.URL {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1])
		if v != "" && (k != "offset" || v != "0") {
			q.Set(k, v)
		}
	}
	return template.URL("?" + q.Encode())
}

// formTarget is the value of an action form's "target" field: its spec,
// key or group, query-encoded (alternating keys and values), so that any
// bytes they hold come back from the browser unchanged (handleAction).
func formTarget(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return q.Encode()
}

// sparkline draws rates as an inline SVG polyline.
func sparkline(r []int) template.HTML {
	const w, h = 120, 20
	if len(r) < 2 {
		return template.HTML(`<svg class="spark" width="120" height="20" role="img" aria-label="no data yet"></svg>`)
	}
	top := 1
	for _, v := range r {
		top = max(top, v)
	}
	var pts bytes.Buffer
	for i, v := range r {
		x := float64(i) * w / float64(len(r)-1)
		y := h - 1 - float64(v)*(h-2)/float64(top)
		fmt.Fprintf(&pts, "%.1f,%.1f ", x, y)
	}
	return template.HTML(fmt.Sprintf(`<svg class="spark" width="%d" height="%d" role="img" aria-label="completions per %s, peak %d"><polyline fill="none" stroke="currentColor" points="%s"/></svg>`,
		w, h, historyStep, top, pts.String()))
}

func intParam(r *http.Request, name string, def, lo, hi int) int {
	v, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil {
		return def
	}
	return min(max(v, lo), hi)
}

func statusParam(v string) (coordinate.Status, bool) {
	n, err := strconv.Atoi(v)
	if err == nil && coordinate.Status(n).Valid() {
		return coordinate.Status(n), true
	}
	for _, s := range allStatuses {
		if s.String() == v {
			return s, true
		}
	}
	return 0, false
}
