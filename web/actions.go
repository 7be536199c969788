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

// retryPage is how many failed units one step of "retry" lists and
// retries (Server.retryPage; tests make it smaller).
const retryPage = 1000

// crossOrigin refuses the posts a browser makes from another origin.
var crossOrigin = http.NewCrossOriginProtection()

func (s *Server) handleAction(w http.ResponseWriter, r *http.Request) {
	if !s.opts.Actions {
		s.fail(w, http.StatusForbidden, "actions are disabled on this daemon (start it with -httpd-actions to enable them)")
		return
	}
	// The form token below is the same on every page and pages need no
	// credentials, so whoever can read a page can forge a form: a browser
	// holding the basic-auth password would post it from any site. A
	// browser says where a post comes from (Sec-Fetch-Site, Origin); one
	// from another origin is refused. Clients that send neither (curl)
	// still pass.
	if err := crossOrigin.Check(r); err != nil {
		s.fail(w, http.StatusForbidden, "cross-origin request refused: use the dashboard's own forms")
		return
	}
	if s.opts.Token == "" && !directHost(r.Host) {
		// Without a token, the only guard is who can reach the port. A
		// page of another site whose DNS name was rebound to this
		// address (DNS rebinding) counts as same-origin to the browser,
		// but it names that site in Host.
		s.fail(w, http.StatusForbidden, "actions without -httpd-token are accepted only at an IP address or localhost, not at "+strconv.Quote(r.Host)+": set -httpd-token to act through a host name")
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
	if f.Has("target") {
		// The dashboard's forms name what they act on in one field,
		// query-encoded (formTarget): names and keys are byte strings, and
		// a browser hands back a field's raw value changed (a byte that is
		// not UTF-8 or a NUL as U+FFFD, a lone CR or LF as CR LF).
		t, err := url.ParseQuery(f.Get("target"))
		if err != nil {
			s.fail(w, http.StatusBadRequest, "malformed target: "+err.Error())
			return
		}
		spec, key, group = t.Get("spec"), t.Get("key"), t.Get("group")
	}
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
			// RetryWorkUnits leaves alone a unit that is no longer FAILED
			// (leased or finished since the page was drawn), as the
			// spec-wide retry does.
			n, err := s.ns.RetryWorkUnits(ctx, spec, []string{key})
			if err == nil && n == 0 {
				return "nothing retried: the unit is no longer failed", nil
			}
			return "1 unit retried", err
		}
		n, err := s.retryFailed(ctx, spec, s.retryPage)
		return fmt.Sprintf("%d failed units retried", n), err
	case "prioritize":
		p, err := strconv.ParseFloat(priority, 64)
		if err != nil || key == "" {
			return "", fmt.Errorf("prioritize needs a unit key and a numeric priority, not %q", priority)
		}
		// PrioritizeWorkUnits ignores unknown keys: say so rather than
		// report a priority set on nothing.
		n, err := s.ns.PrioritizeWorkUnits(ctx, spec, []string{key}, &p, 0)
		if err == nil && n == 0 {
			err = fmt.Errorf("work spec %q has no unit %q", spec, key)
		}
		return "priority set", err
	case "cancel":
		n, err := s.ns.CancelGroup(ctx, group)
		return fmt.Sprintf("%d units cancelled", n), err
	}
	return "", fmt.Errorf("unknown action %q", action)
}

// retryFailed makes every FAILED unit of spec AVAILABLE again, a page at
// a time. The pages walk the failed units in key order, each starting
// after the last key of the one before (keyset), so a unit is retried at
// most once even when units fail again meanwhile (those are behind the
// walk), and each page is one RetryWorkUnits call, which leaves alone a
// unit that stopped being FAILED since it was listed (leased, say).
func (s *Server) retryFailed(ctx context.Context, spec string, page int) (int, error) {
	done := 0
	for start := ""; ; {
		units, err := s.ns.ListWorkUnits(ctx, spec, coordinate.WorkUnitQuery{
			Statuses: []coordinate.Status{coordinate.StatusFailed}, KeyOrder: true, Start: start, Limit: page})
		if err != nil || len(units) == 0 {
			return done, err
		}
		keys := make([]string, len(units))
		for i, u := range units {
			keys[i] = u.Key.Bytes
		}
		n, err := s.ns.RetryWorkUnits(ctx, spec, keys)
		done += n
		if err != nil || len(units) < page {
			return done, err
		}
		start = keys[len(keys)-1] + "\x00" // the least key after it
	}
}
