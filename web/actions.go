package web

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/coordinated/coordinated/cborrpc"
	"github.com/coordinated/coordinated/coordinate"
)

// Actions: POST /ui/action with a form carrying the CSRF token, the action
// and its target. They run only with Options.Actions (-httpd-actions) and,
// when Options.Token is set, with that token as a bearer token or basic-auth
// password. Each is logged.

// retryBatch is how many failed units one step of "retry" lists.
const retryBatch = 1000

func (s *Server) handleAction(w http.ResponseWriter, r *http.Request) {
	if !s.opts.Actions {
		s.fail(w, http.StatusForbidden, "actions are disabled on this daemon (start it with -httpd-actions to enable them)")
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="coordinated actions"`)
		s.fail(w, http.StatusUnauthorized, "this action needs the daemon's token (-httpd-token) as a bearer token or basic-auth password")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.fail(w, http.StatusForbidden, "missing or stale form token: reload the page and try again")
		return
	}
	f := r.PostForm
	action, spec, key, group := f.Get("action"), f.Get("spec"), f.Get("key"), f.Get("group")
	result, err := s.act(r.Context(), action, spec, key, group, f.Get("priority"))
	log := s.log.With("action", cborrpc.LogValue(action), "spec", cborrpc.LogValue(spec),
		"key", cborrpc.LogValue(key), "group", cborrpc.LogValue(group), "remote", r.RemoteAddr)
	if err != nil {
		log.Warn("dashboard action failed", "error", cborrpc.LogValue(err.Error()))
		s.fail(w, http.StatusBadRequest, action+": "+err.Error())
		return
	}
	log.Info("dashboard action", "result", result)
	// Back to the page the form was on (only a local path), saying what
	// was done.
	back, err := url.Parse(f.Get("return"))
	if err != nil || back.Host != "" || back.Scheme != "" || !strings.HasPrefix(back.Path, "/") || strings.HasPrefix(back.Path, "//") {
		back = &url.URL{Path: "/ui/"}
	}
	q := back.Query()
	q.Set("flash", action+": "+result)
	back.RawQuery = q.Encode()
	http.Redirect(w, r, back.String(), http.StatusSeeOther)
}

// act applies one action and describes what it did.
func (s *Server) act(ctx context.Context, action, spec, key, group, priority string) (string, error) {
	switch action {
	case "pause", "resume":
		paused := action == "pause"
		if err := s.ns.ControlWorkSpec(ctx, spec, coordinate.WorkSpecControl{Paused: &paused}); err != nil {
			return "", err
		}
		return "work spec " + action + "d", nil
	case "retry":
		if key != "" {
			return "1 unit retried", s.ns.UpdateWorkUnit(ctx, spec, key, coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable})
		}
		n, err := s.retryFailed(ctx, spec)
		return fmt.Sprintf("%d failed units retried", n), err
	case "prioritize":
		p, err := strconv.ParseFloat(priority, 64)
		if err != nil || key == "" {
			return "", fmt.Errorf("prioritize needs a unit key and a numeric priority, not %q", priority)
		}
		return "priority set", s.ns.PrioritizeWorkUnits(ctx, spec, []string{key}, &p, 0)
	case "cancel":
		n, err := s.ns.CancelGroup(ctx, group)
		return fmt.Sprintf("%d units cancelled", n), err
	}
	return "", fmt.Errorf("unknown action %q", action)
}

// retryFailed makes every FAILED unit of spec AVAILABLE again, a batch at
// a time, visiting at most as many units as were failed at the start.
func (s *Server) retryFailed(ctx context.Context, spec string) (int, error) {
	counts, err := s.ns.CountWorkUnits(ctx, spec)
	if err != nil {
		return 0, err
	}
	done, budget := 0, counts[coordinate.StatusFailed]
	for done < budget {
		units, err := s.ns.ListWorkUnits(ctx, spec, coordinate.WorkUnitQuery{
			Statuses: []coordinate.Status{coordinate.StatusFailed}, Limit: min(retryBatch, budget-done)})
		if err != nil || len(units) == 0 {
			return done, err
		}
		for _, u := range units {
			if err := s.ns.UpdateWorkUnit(ctx, spec, u.Key.Bytes, coordinate.WorkUnitUpdate{Status: coordinate.StatusAvailable}); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}
