package queuemaxhttp

import (
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// TestAdminHandler_QueueLimits: POST /queues/{name}/limits sets and clears
// a queue's global limits (with the token; bad input is a 400 naming it),
// and GET /queues and /stats show them.
func TestAdminHandler_QueueLimits(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{Token: adminTestToken})
	bearer := "Bearer " + adminTestToken
	const js = "application/json"
	r := f.do(t, "POST", "/admin/queues/emails/limits", bearer, js, `{"rate": 50, "per": "1s", "concurrency": 4}`)
	if r.status != 200 || !strings.Contains(r.raw, `"concurrency": 4`) || !strings.Contains(r.raw, `"per": "1s"`) {
		t.Fatalf("POST limits = %d %s", r.status, r.raw)
	}
	want := queuemax.QueueLimits{Rate: queuemax.Rate{Limit: 50, Per: time.Second}, Concurrency: 4}
	qs, err := f.b.c.Queues(f.b.ctx)
	found := false
	for _, q := range qs {
		found = found || q.Name == "emails" && q.Limits == want
	}
	if err != nil || !found {
		t.Errorf("Queues after POST limits = %+v, %v; want emails with %+v", qs, err, want)
	}
	if got := f.do(t, "GET", "/admin/queues", "", "", ""); !strings.Contains(got.raw, `"limits": {`) || !strings.Contains(got.raw, `"rate": 50`) {
		t.Errorf("GET /queues = %s; want emails' limits", got.raw)
	}
	if got := f.do(t, "GET", "/admin/stats", "", "", ""); !strings.Contains(got.raw, `"scope": "queue"`) {
		t.Errorf("GET /stats = %s; want the queue's global limit", got.raw)
	}
	for _, c := range []struct {
		path, auth, body string
		status           int
		want             string
	}{
		{"/admin/queues/emails/limits", "", `{"concurrency": 1}`, 401, ""},
		{"/admin/queues/Emails/limits", bearer, `{"concurrency": 1}`, 400, "invalid queue name"},
		{"/admin/queues/emails/limits", bearer, `{"concurrency": -1}`, 400, "concurrency -1"},
		{"/admin/queues/emails/limits", bearer, `{"rate": 5}`, 400, "positive period"},
		{"/admin/queues/emails/limits", bearer, `{"rate": 5, "per": "soon"}`, 400, `per \"soon\"`},
		{"/admin/queues/emails/limits", bearer, `{"burst": 5}`, 400, "burst"},
	} {
		if r := f.do(t, "POST", c.path, c.auth, js, c.body); r.status != c.status || !strings.Contains(r.raw, c.want) {
			t.Errorf("POST %s %s = %d %s; want %d naming %q", c.path, c.body, r.status, r.raw, c.status, c.want)
		}
	}
	if r := f.do(t, "POST", "/admin/queues/emails/limits", bearer, js, `{}`); r.status != 200 {
		t.Errorf("POST {} (clear) = %d %s", r.status, r.raw)
	}
	if qs, err := f.b.c.Queues(f.b.ctx); err != nil || len(qs) != 1 {
		t.Errorf("Queues after clearing = %+v, %v; want only the default queue", qs, err)
	}
}
