package queuemaxhttp

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// serve sends req through h and returns the recorder.
func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestAdmin_UIAssets(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{Token: adminTestToken, ProtectReads: true})
	get := func(path string) *httptest.ResponseRecorder {
		return serve(f.h, httptest.NewRequestWithContext(t.Context(), "GET", path, nil))
	}
	// The page loads without the token (it asks for it); its data does not.
	if rec := get("/admin/ui"); rec.Code != http.StatusMovedPermanently || rec.Header().Get("Location") != "ui/" {
		t.Errorf("GET /admin/ui = %d Location %q, want 301 to the relative ui/ (which keeps the mount prefix)", rec.Code, rec.Header().Get("Location"))
	}
	rec := get("/admin/ui/")
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(rec.Body.String(), `<script src="app.js"`) {
		t.Fatalf("GET /admin/ui/ = %d %q\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	for path, ctype := range map[string]string{"/admin/ui/core.js": "text/javascript; charset=utf-8", "/admin/ui/app.js": "text/javascript; charset=utf-8", "/admin/ui/style.css": "text/css; charset=utf-8"} {
		if rec := get(path); rec.Code != 200 || rec.Header().Get("Content-Type") != ctype || rec.Body.Len() == 0 {
			t.Errorf("GET %s = %d %q (%d bytes)", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len())
		}
	}
	for _, path := range []string{"/admin/ui/missing.js", "/admin/ui/index.go"} {
		if rec := get(path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, rec.Code)
		}
	}
	// Unmounted (no ServeMux cleaning the path first), a climb out is refused.
	h := NewHandler(f.b.c, Options{})
	if rec := serve(h, &http.Request{Method: "GET", URL: &url.URL{Path: "/ui/../http.go"}, Header: http.Header{}}); rec.Code != http.StatusNotFound {
		t.Errorf("GET /ui/../http.go = %d, want 404", rec.Code)
	}
	if rec := get("/admin/tasks"); rec.Code != http.StatusUnauthorized {
		t.Errorf("GET /admin/tasks with ProtectReads and no token = %d, want 401", rec.Code)
	}
	if rec := serve(f.h, httptest.NewRequestWithContext(t.Context(), "POST", "/admin/ui/", nil)); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /admin/ui/ = %d, want 405", rec.Code)
	}
	// Nothing the page needs comes from elsewhere.
	for _, name := range []string{"ui/index.html", "ui/core.js", "ui/workflows.js", "ui/app.js", "ui/style.css"} {
		b, err := uiFiles.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), `"http://www.w3.org/2000/svg"`, "") // the SVG namespace is a name, not a fetch
		for _, bad := range []string{"http://", "https://", "//cdn", "innerHTML"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s contains %q: assets must not load from the internet or insert HTML", name, bad)
			}
		}
	}
}

func TestAdmin_CrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{Token: adminTestToken, TrustedOrigins: []string{"https://ops.example.com"}})
	post := func(headers map[string]string) int {
		req := httptest.NewRequestWithContext(t.Context(), "POST", "http://queue.internal/admin/retry", nil)
		req.Header.Set("Authorization", "Bearer "+adminTestToken)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return serve(f.h, req).Code
	}
	tests := []struct {
		name    string
		headers map[string]string
		want    int
	}{
		{"CrossSite", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"SameSiteOtherOrigin", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"ForeignOrigin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"SameOrigin", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://queue.internal"}, http.StatusOK},
		{"TrustedOrigin", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://ops.example.com"}, http.StatusOK},
		{"NotABrowser", nil, http.StatusOK},
	}
	for _, tt := range tests {
		if got := post(tt.headers); got != tt.want {
			t.Errorf("%s: POST /admin/retry = %d, want %d", tt.name, got, tt.want)
		}
	}
	// Reads stay open to other origins' links (they change nothing).
	req := httptest.NewRequestWithContext(t.Context(), "GET", "/admin/stats", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if rec := serve(f.h, req); rec.Code != http.StatusOK {
		t.Errorf("cross-site GET /admin/stats = %d, want 200", rec.Code)
	}
}

func TestAdmin_DashboardEndpoints(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{})

	r := f.do(t, "GET", "/admin/info", "", "", "")
	if r.status != 200 || r.body["read_only"] != true || r.body["shards"] != 2.0 {
		t.Errorf("info = %d %s", r.status, r.raw)
	}

	r = f.do(t, "GET", "/admin/tasks", "", "", "")
	var tasks struct {
		Tasks []struct {
			Task        string           `json:"task"`
			Pending     int64            `json:"pending"`
			Failed      int64            `json:"failed"`
			DeadLetters int64            `json:"dead_letters"`
			PerShard    map[string]int64 `json:"per_shard"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.raw), &tasks); err != nil || r.status != 200 {
		t.Fatalf("tasks = %d %s (%v)", r.status, r.raw, err)
	}
	if len(tasks.Tasks) != 2 || tasks.Tasks[0].Task != "test.fail" || tasks.Tasks[1].Task != "test.ok" {
		t.Fatalf("tasks = %s, want test.fail and test.ok", r.raw)
	}
	if tf := tasks.Tasks[0]; tf.Failed != 1 || tf.DeadLetters != 1 || tf.Pending != 0 || len(tf.PerShard) != 1 {
		t.Errorf("test.fail = %+v, want 1 failed, 1 dead letter, on one shard", tf)
	}
	if to := tasks.Tasks[1]; to.Pending != 1 || to.Failed != 0 {
		t.Errorf("test.ok = %+v, want 1 pending", to)
	}
	if r := f.do(t, "GET", "/admin/tasks?x=1", "", "", ""); r.status != 400 || !strings.Contains(r.raw, `\"x\"`) {
		t.Errorf("tasks?x=1 = %d %s, want 400 naming x", r.status, r.raw)
	}

	r = f.do(t, "GET", "/admin/throughput", "", "", "")
	if pts, _ := r.body["points"].([]any); r.status != 200 || len(pts) != int(throughputWindow/throughputStep) {
		t.Errorf("throughput = %d, %d points", r.status, len(pts))
	}
	r = f.do(t, "GET", "/admin/workers", "", "", "")
	if ws, _ := r.body["workers"].([]any); r.status != 200 || len(ws) != 0 {
		t.Errorf("workers without Run = %s, want none", r.raw)
	}
	r = f.do(t, "GET", "/admin/breakers", "", "", "")
	if bs, _ := r.body["breakers"].([]any); r.status != 200 || r.body["running"] != false {
		t.Errorf("breakers without Run = %s", r.raw)
	} else {
		for _, b := range bs {
			if b.(map[string]any)["state"] != "closed" {
				t.Errorf("breaker without a failure = %v, want closed", b)
			}
		}
	}

	// Text search: the error, the payload, the task; case-insensitive.
	for q, want := range map[string]queuemax.JobID{"BOOM": f.failed, `"n":2`: f.pending, "test.ok": f.pending} {
		r := f.do(t, "GET", "/admin/jobs?q="+strings.ReplaceAll(q, `"`, "%22"), "", "", "")
		js, _ := r.body["jobs"].([]any)
		if len(js) != 1 || js[0].(map[string]any)["id"] != float64(want) {
			t.Errorf("jobs?q=%s = %s, want job %d only", q, r.raw, want)
		}
	}
	if r := f.do(t, "GET", "/admin/jobs?q=nothing-matches", "", "", ""); !strings.Contains(r.raw, `"jobs": []`) {
		t.Errorf("jobs?q=nothing-matches = %s, want an empty list", r.raw)
	}
}

func TestThroughputSeries(t *testing.T) {
	t.Parallel()
	var tp throughput
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	feed := func(at time.Duration, completed, failed, retried int64) {
		t.Helper()
		if err := tp.observe(t0.Add(at), func() (tpSample, error) { return tpSample{completed: completed, failed: failed, retried: retried}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	feed(0, 100, 5, 0)
	feed(500*time.Millisecond, 999, 999, 999) // within throughputSample: ignored
	feed(2*time.Second, 103, 5, 1)
	feed(6*time.Second, 110, 6, 1)
	feed(16*time.Second, 112, 6, 0) // retried went down: a restarted worker
	pts := tp.series(t0.Add(16 * time.Second))
	if len(pts) != int(throughputWindow/throughputStep) {
		t.Fatalf("%d points", len(pts))
	}
	// The window ends with the step holding now; steps are 5s.
	last := len(pts) - 1
	if !pts[last].At.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("last step at %v, want %v", pts[last].At, t0.Add(15*time.Second))
	}
	val := func(p *int64) any {
		if p == nil {
			return nil
		}
		return *p
	}
	want := map[int][3]any{
		last - 4: {nil, nil, nil},                // before any sample: unknown
		last - 3: {int64(3), int64(0), int64(1)}, // 0–5s: the samples at 0 and 2s
		last - 2: {int64(7), int64(1), int64(0)}, // 5–10s: 2s → 6s
		last - 1: {int64(0), int64(0), int64(0)}, // 10–15s: no sample of its own, but covered
		last:     {int64(2), int64(0), int64(0)}, // 15–20s: 6s → 16s; retried went down, counts from zero
	}
	for k, w := range want {
		p := pts[k]
		got := [3]any{val(p.Completed), val(p.Failed), val(p.Retried)}
		if got != w {
			t.Errorf("step %d (%v): got %v, want %v", k, p.At.Sub(t0), got, w)
		}
	}
	// Old samples fall out of the window.
	feed(throughputWindow+time.Minute, 200, 6, 0)
	tp.mu.Lock()
	n := len(tp.samples)
	tp.mu.Unlock()
	if n > 2 {
		t.Errorf("%d samples kept after the window moved on, want at most 2", n)
	}
}

// TestAdmin_TasksFromJobCounts checks that GET /tasks counts every task,
// dead letters included (Client.CountsByTask, the store's one-pass JobCounts:
// TestCountsByTask_OnePass).
func TestAdmin_TasksFromJobCounts(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{})
	r := f.do(t, "GET", "/admin/tasks", "", "", "")
	ts, _ := r.body["tasks"].([]any)
	if r.status != 200 || len(ts) != 2 {
		t.Fatalf("tasks = %d %s, want test.fail and test.ok", r.status, r.raw)
	}
	if tf := ts[0].(map[string]any); tf["task"] != "test.fail" || tf["failed"] != 1.0 || tf["dead_letters"] != 1.0 {
		t.Errorf("test.fail = %v, want 1 failed and 1 dead letter", tf)
	}
}
