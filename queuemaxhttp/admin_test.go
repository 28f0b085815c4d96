package queuemaxhttp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/queuemax/queuemax"
)

const adminTestToken = "s3cret-token"

// adminFixture is a client with one failed (dead-lettered) job and one
// pending job, and its admin handler mounted under /admin/.
type adminFixture struct {
	b       *testBundle
	h       http.Handler
	failed  queuemax.JobID
	pending queuemax.JobID
	dlq     *queuemax.DeadLetter
}

func adminOKHandler(name string) queuemax.Handler {
	return queuemax.Handler{Name: name, Func: func(context.Context, *queuemax.Job) (any, error) { return nil, nil }}
}

func newAdminFixture(t *testing.T, opts Options) *adminFixture {
	t.Helper()
	b := setup(t, queuemax.Config{Shards: 2, Handlers: []queuemax.Handler{adminOKHandler("test.ok"), adminOKHandler("test.fail")}})
	f := &adminFixture{b: b}
	var err error
	if f.failed, err = b.c.Enqueue(b.ctx, "test.fail", map[string]int{"n": 1}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.c.Claim(b.ctx, "w1", 1)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %v, %v", jobs, err)
	}
	if _, err := b.c.Fail(b.ctx, jobs[0], queuemax.Permanent(errors.New("boom"))); err != nil {
		t.Fatal(err)
	}
	if f.pending, err = b.c.Enqueue(b.ctx, "test.ok", map[string]int{"n": 2}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	dls, err := b.c.DeadLetters(b.ctx, queuemax.ListParams{})
	if err != nil || len(dls) != 1 {
		t.Fatalf("DeadLetters = %v, %v", dls, err)
	}
	f.dlq = dls[0]
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", NewHandler(b.c, opts)))
	f.h = mux
	return f
}

type adminResponse struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends one request through the fixture's mux. auth is the whole
// Authorization header ("" for none).
func (f *adminFixture) do(t *testing.T, method, path, auth, contentType, body string) adminResponse {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequestWithContext(t.Context(), method, path, rd)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	res := adminResponse{status: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &res.body); err != nil {
		t.Errorf("%s %s: body is not a JSON object: %v\n%s", method, path, err, res.raw)
	}
	return res
}

func TestAdminHandler(t *testing.T) {
	t.Parallel()
	bearer := "Bearer " + adminTestToken
	big := `{"task": "test.ok", "payload": {"x": "` + strings.Repeat("a", 2<<10) + `"}}`
	tests := []struct {
		name        string
		method      string
		path        func(f *adminFixture) string
		auth        string
		contentType string
		body        string
		wantStatus  int
		wantIn      string                                               // substring of the raw body
		check       func(t *testing.T, f *adminFixture, r adminResponse) // optional
	}{
		{name: "Stats", method: "GET", path: adminPath("/admin/stats"), wantStatus: 200,
			check: func(t *testing.T, f *adminFixture, r adminResponse) {
				if r.body["num_shards"] != 2.0 || r.body["failed"] != 1.0 || r.body["pending"] != 1.0 {
					t.Errorf("stats = %s", r.raw)
				}
				if sh, _ := r.body["shards"].([]any); len(sh) != 2 {
					t.Errorf("stats shards = %v, want 2", r.body["shards"])
				}
			}},
		{name: "StatsHead", method: "HEAD", path: adminPath("/admin/stats"), wantStatus: 200},
		{name: "Jobs", method: "GET", path: adminPath("/admin/jobs"), wantStatus: 200,
			check: func(t *testing.T, f *adminFixture, r adminResponse) {
				if js, _ := r.body["jobs"].([]any); len(js) != 2 {
					t.Errorf("jobs = %s, want 2", r.raw)
				}
			}},
		{name: "JobsFiltered", method: "GET", path: func(f *adminFixture) string {
			return fmt.Sprintf("/admin/jobs?status=failed&task=test.fail&shard=%d&limit=5", f.failed.Shard())
		}, wantStatus: 200, check: func(t *testing.T, f *adminFixture, r adminResponse) {
			js, _ := r.body["jobs"].([]any)
			if len(js) != 1 || js[0].(map[string]any)["last_error"] != "boom" || js[0].(map[string]any)["id"] != float64(f.failed) {
				t.Errorf("jobs = %s, want the failed job", r.raw)
			}
		}},
		{name: "JobsBadStatus", method: "GET", path: adminPath("/admin/jobs?status=bogus"), wantStatus: 400, wantIn: "status"},
		{name: "JobsBadLimit", method: "GET", path: adminPath("/admin/jobs?limit=0"), wantStatus: 400, wantIn: "limit"},
		{name: "JobsLimitNotNumber", method: "GET", path: adminPath("/admin/jobs?limit=ten"), wantStatus: 400, wantIn: "limit"},
		{name: "JobsBadShard", method: "GET", path: adminPath("/admin/jobs?shard=2"), wantStatus: 400, wantIn: "shard"},
		{name: "JobsUnknownParam", method: "GET", path: adminPath("/admin/jobs?colour=red"), wantStatus: 400, wantIn: "colour"},
		{name: "Job", method: "GET", path: func(f *adminFixture) string { return fmt.Sprintf("/admin/jobs/%d", f.pending) },
			wantStatus: 200, wantIn: `"status": "pending"`},
		{name: "JobShardSeq", method: "GET", path: func(f *adminFixture) string {
			return fmt.Sprintf("/admin/jobs/%d:%d", f.pending.Shard(), f.pending.Seq())
		}, wantStatus: 200, wantIn: `"task": "test.ok"`},
		{name: "JobUnknown", method: "GET", path: adminPath("/admin/jobs/0:999"), wantStatus: 404},
		{name: "JobUnknownShard", method: "GET", path: adminPath("/admin/jobs/5:1"), wantStatus: 404},
		{name: "JobBadID", method: "GET", path: adminPath("/admin/jobs/abc"), wantStatus: 400, wantIn: "job id"},
		{name: "DeadLetters", method: "GET", path: adminPath("/admin/dead-letters?task=test.fail"), wantStatus: 200,
			check: func(t *testing.T, f *adminFixture, r adminResponse) {
				dl, _ := r.body["dead_letters"].([]any)
				if len(dl) != 1 || dl[0].(map[string]any)["error"] != "boom" {
					t.Errorf("dead letters = %s", r.raw)
				}
			}},
		{name: "DeadLettersStatusParam", method: "GET", path: adminPath("/admin/dead-letters?status=failed"), wantStatus: 400, wantIn: "status"},
		{name: "Periodic", method: "GET", path: adminPath("/admin/periodic"), wantStatus: 200, wantIn: `"periodic": []`},

		{name: "RetryAll", method: "POST", path: adminPath("/admin/retry"), auth: bearer, wantStatus: 200, wantIn: `"retried": 1`,
			check: adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.failed }, queuemax.StatusPending)},
		{name: "RetryShard", method: "POST", path: func(f *adminFixture) string {
			return fmt.Sprintf("/admin/retry?shard=%d", 1-f.failed.Shard())
		}, auth: bearer, wantStatus: 200, wantIn: `"retried": 0`},
		{name: "RetryBadShard", method: "POST", path: adminPath("/admin/retry?shard=-1"), auth: bearer, wantStatus: 400, wantIn: "shard"},
		{name: "RetryJob", method: "POST", path: func(f *adminFixture) string { return fmt.Sprintf("/admin/jobs/%d/retry", f.failed) },
			auth: bearer, wantStatus: 200, check: adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.failed }, queuemax.StatusPending)},
		{name: "RetryJobNotFailed", method: "POST", path: func(f *adminFixture) string { return fmt.Sprintf("/admin/jobs/%d/retry", f.pending) },
			auth: bearer, wantStatus: 404},
		{name: "CancelJob", method: "POST", path: func(f *adminFixture) string { return fmt.Sprintf("/admin/jobs/%d/cancel", f.pending) },
			auth: bearer, wantStatus: 200, wantIn: `"status": "cancelled"`,
			check: adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.pending }, queuemax.StatusCancelled)},
		{name: "CancelFinishedJob", method: "POST", path: func(f *adminFixture) string { return fmt.Sprintf("/admin/jobs/%d/cancel", f.failed) },
			auth: bearer, wantStatus: 409, wantIn: "already finished",
			check: adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.failed }, queuemax.StatusFailed)},
		{name: "CancelUnknownJob", method: "POST", path: adminPath("/admin/jobs/999999/cancel"), auth: bearer, wantStatus: 404},
		{name: "CancelNoToken", method: "POST", path: func(f *adminFixture) string { return fmt.Sprintf("/admin/jobs/%d/cancel", f.pending) },
			wantStatus: 401, check: adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.pending }, queuemax.StatusPending)},
		{name: "RetryJobWithBody", method: "POST", path: func(f *adminFixture) string { return fmt.Sprintf("/admin/jobs/%d/retry", f.failed) },
			auth: bearer, body: `{}`, wantStatus: 400, wantIn: "no request body"},
		{name: "Requeue", method: "POST", path: func(f *adminFixture) string {
			return fmt.Sprintf("/admin/dead-letters/%d/%d/requeue", f.dlq.Shard, f.dlq.ID)
		}, auth: bearer, wantStatus: 200, check: func(t *testing.T, f *adminFixture, r adminResponse) {
			if r.body["job_id"] != float64(f.failed) {
				t.Errorf("requeue = %s, want job_id %d", r.raw, f.failed)
			}
		}},
		{name: "RequeueUnknown", method: "POST", path: adminPath("/admin/dead-letters/0/999/requeue"), auth: bearer, wantStatus: 404},
		{name: "RequeueUnknownShard", method: "POST", path: adminPath("/admin/dead-letters/7/1/requeue"), auth: bearer, wantStatus: 404},
		{name: "RequeueBadID", method: "POST", path: adminPath("/admin/dead-letters/0/x/requeue"), auth: bearer, wantStatus: 400, wantIn: "dead letter id"},
		{name: "Purge", method: "POST", path: adminPath("/admin/purge"), auth: bearer, contentType: "application/json",
			body: `{"statuses": ["failed"]}`, wantStatus: 200, wantIn: `"purged": 1`,
			check: adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.failed }, "")},
		{name: "PurgeNoStatuses", method: "POST", path: adminPath("/admin/purge"), auth: bearer, body: `{}`, wantStatus: 400, wantIn: "statuses"},
		{name: "PurgeBadStatus", method: "POST", path: adminPath("/admin/purge"), auth: bearer, body: `{"statuses": ["gone"]}`, wantStatus: 400, wantIn: `statuses\"[0]`},
		{name: "PurgeMalformed", method: "POST", path: adminPath("/admin/purge"), auth: bearer, body: `{"statuses": [`, wantStatus: 400, wantIn: "request body"},
		{name: "PurgeWrongType", method: "POST", path: adminPath("/admin/purge"), auth: bearer, body: `{"statuses": "failed"}`, wantStatus: 400, wantIn: "statuses"},
		{name: "PurgeUnknownField", method: "POST", path: adminPath("/admin/purge"), auth: bearer, body: `{"status": ["failed"]}`, wantStatus: 400, wantIn: "unknown field"},
		{name: "PurgeTrailingData", method: "POST", path: adminPath("/admin/purge"), auth: bearer, body: `{"statuses": ["failed"]} {}`, wantStatus: 400, wantIn: "after the JSON"},
		{name: "PurgeEmptyBody", method: "POST", path: adminPath("/admin/purge"), auth: bearer, wantStatus: 400, wantIn: "empty"},
		{name: "PurgeNotJSON", method: "POST", path: adminPath("/admin/purge"), auth: bearer, contentType: "text/plain", body: `statuses=failed`, wantStatus: 415},
		{name: "Recover", method: "POST", path: adminPath("/admin/recover"), auth: bearer, wantStatus: 200, wantIn: `"requeued": 0`},
		{name: "Enqueue", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, contentType: "application/json; charset=utf-8",
			body:       `{"task": "test.ok", "payload": {"to": "x"}, "opts": {"priority": 2, "max_retries": 0, "key": 3, "delay": "1h"}}`,
			wantStatus: 201, check: func(t *testing.T, f *adminFixture, r adminResponse) {
				id := queuemax.JobID(r.body["job_id"].(float64))
				j, err := f.b.c.Job(f.b.ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if j.Status != queuemax.StatusScheduled || j.Priority != queuemax.PriorityHigh || j.MaxAttempts != 1 || j.Shard != 1 || string(j.Payload) != `{"to":"x"}` {
					t.Errorf("enqueued job = %+v", j)
				}
				if r.body["shard"] != 1.0 {
					t.Errorf("enqueue shard = %v, want 1", r.body["shard"])
				}
			}},
		{name: "EnqueueQueue", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer,
			body: `{"task": "test.ok", "opts": {"queue": "emails"}}`, wantStatus: 201,
			check: func(t *testing.T, f *adminFixture, r adminResponse) {
				id := queuemax.JobID(r.body["job_id"].(float64))
				if j, err := f.b.c.Job(f.b.ctx, id); err != nil || j.Queue != "emails" {
					t.Errorf("enqueued job = %+v, %v; want queue emails", j, err)
				}
			}},
		{name: "EnqueueBadQueue", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"task": "test.ok", "opts": {"queue": "A B"}}`, wantStatus: 400, wantIn: "invalid queue name"},
		{name: "Queues", method: "GET", path: adminPath("/admin/queues"), wantStatus: 200, wantIn: `"name": "default"`},
		{name: "PauseQueue", method: "POST", path: adminPath("/admin/queues/emails/pause"), auth: bearer, wantStatus: 200, wantIn: `"paused": true`,
			check: func(t *testing.T, f *adminFixture, r adminResponse) {
				qs, err := f.b.c.Queues(f.b.ctx)
				if err != nil || len(qs) != 2 || qs[1].Name != "emails" || !qs[1].Paused {
					t.Errorf("Queues after POST pause = %+v, %v; want emails paused", qs, err)
				}
				got := f.do(t, "GET", "/admin/queues", "", "", "")
				if !strings.Contains(got.raw, `"paused": true`) {
					t.Errorf("GET /queues after pause = %s", got.raw)
				}
				if res := f.do(t, "POST", "/admin/queues/emails/resume", bearer, "", ""); res.status != 200 || !strings.Contains(res.raw, `"paused": false`) {
					t.Errorf("POST resume = %d %s", res.status, res.raw)
				}
				if qs, err := f.b.c.Queues(f.b.ctx); err != nil || qs[1].Paused {
					t.Errorf("Queues after POST resume = %+v, %v; want emails not paused", qs, err)
				}
			}},
		{name: "PauseBadQueue", method: "POST", path: adminPath("/admin/queues/Emails/pause"), auth: bearer, wantStatus: 400, wantIn: "invalid queue name"},
		{name: "PauseNoToken", method: "POST", path: adminPath("/admin/queues/emails/pause"), wantStatus: 401},
		{name: "EnqueueNoPayload", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"task": "test.ok"}`, wantStatus: 201},
		{name: "EnqueueNoTask", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"payload": {}}`, wantStatus: 400, wantIn: `\"task\": required`},
		{name: "EnqueueUnknownTask", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"task": "test.nope"}`, wantStatus: 400, wantIn: "unknown task"},
		{name: "EnqueuePayloadNotObject", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"task": "test.ok", "payload": [1]}`, wantStatus: 400, wantIn: "payload"},
		{name: "EnqueueBadPriority", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"task": "test.ok", "opts": {"priority": 7}}`, wantStatus: 400, wantIn: "priority"},
		{name: "EnqueueNegativeRetries", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"task": "test.ok", "opts": {"max_retries": -1}}`, wantStatus: 400, wantIn: "max_retries"},
		{name: "EnqueueBadDelay", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: `{"task": "test.ok", "opts": {"delay": "soon"}}`, wantStatus: 400, wantIn: "delay"},
		{name: "EnqueueDelayAndRunAt", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer,
			body: `{"task": "test.ok", "opts": {"delay": "1s", "run_at": "2030-01-01T00:00:00Z"}}`, wantStatus: 400, wantIn: "at most one"},
		{name: "EnqueueOversized", method: "POST", path: adminPath("/admin/enqueue"), auth: bearer, body: big, wantStatus: 413, wantIn: "1024 bytes"},

		{name: "MissingToken", method: "POST", path: adminPath("/admin/recover"), wantStatus: 401, wantIn: "missing bearer token",
			check: func(t *testing.T, f *adminFixture, r adminResponse) {
				if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate = %q", r.header.Get("WWW-Authenticate"))
				}
			}},
		{name: "WrongToken", method: "POST", path: adminPath("/admin/retry"), auth: "Bearer nope", wantStatus: 401, wantIn: "invalid bearer token",
			check: adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.failed }, queuemax.StatusFailed)},
		{name: "TokenPrefix", method: "POST", path: adminPath("/admin/retry"), auth: "Bearer " + adminTestToken[:4], wantStatus: 401},
		{name: "BasicAuth", method: "POST", path: adminPath("/admin/retry"), auth: "Basic " + adminTestToken, wantStatus: 401},
		{name: "LowercaseScheme", method: "POST", path: adminPath("/admin/recover"), auth: "bearer " + adminTestToken, wantStatus: 200},
		{name: "UnauthorizedBeforeValidation", method: "POST", path: adminPath("/admin/purge"), body: `{`, wantStatus: 401},

		{name: "WrongMethodGET", method: "DELETE", path: adminPath("/admin/stats"), wantStatus: 405,
			check: adminWantAllow("GET, HEAD")},
		{name: "WrongMethodPOST", method: "GET", path: adminPath("/admin/retry"), wantStatus: 405, check: adminWantAllow("POST")},
		{name: "WrongMethodJob", method: "PUT", path: adminPath("/admin/jobs/1"), wantStatus: 405, check: adminWantAllow("GET, HEAD")},
		{name: "UnknownPath", method: "GET", path: adminPath("/admin/nothing/here"), wantStatus: 404, wantIn: "no admin endpoint"},
		{name: "TrailingSlash", method: "GET", path: adminPath("/admin/stats/"), wantStatus: 200},
	}
	opts := Options{Token: adminTestToken, MaxBodyBytes: 1024}
	shared := newAdminFixture(t, opts) // for requests that change nothing
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := shared
			if tt.method == "POST" && tt.wantStatus < 300 {
				f = newAdminFixture(t, opts)
			}
			path := tt.path(f)
			var r adminResponse
			if tt.method == "HEAD" {
				req := httptest.NewRequestWithContext(t.Context(), "HEAD", path, nil)
				rec := httptest.NewRecorder()
				f.h.ServeHTTP(rec, req)
				r.status = rec.Code
			} else {
				r = f.do(t, tt.method, path, tt.auth, tt.contentType, tt.body)
			}
			if r.status != tt.wantStatus {
				t.Fatalf("%s %s = %d, want %d\n%s", tt.method, path, r.status, tt.wantStatus, r.raw)
			}
			if r.status >= 400 {
				if msg, _ := r.body["error"].(string); msg == "" {
					t.Errorf("%s %s: error response without an error message: %s", tt.method, path, r.raw)
				}
			}
			if tt.wantIn != "" && !strings.Contains(r.raw, tt.wantIn) {
				t.Errorf("%s %s body = %s, want it to contain %q", tt.method, path, r.raw, tt.wantIn)
			}
			if tt.check != nil {
				tt.check(t, f, r)
			}
		})
	}
}

func adminPath(p string) func(*adminFixture) string { return func(*adminFixture) string { return p } }

// adminWantStatus checks a job's status after the request; "" means the job
// must be gone.
func adminWantStatus(id func(*adminFixture) queuemax.JobID, want queuemax.Status) func(*testing.T, *adminFixture, adminResponse) {
	return func(t *testing.T, f *adminFixture, _ adminResponse) {
		t.Helper()
		j, err := f.b.c.Job(f.b.ctx, id(f))
		switch {
		case want == "" && !errors.Is(err, queuemax.ErrJobNotFound):
			t.Errorf("job %d: %v, %v; want it gone", id(f), j, err)
		case want != "" && (err != nil || j.Status != want):
			t.Errorf("job %d: %v, %v; want status %s", id(f), j, err, want)
		}
	}
}

func adminWantAllow(want string) func(*testing.T, *adminFixture, adminResponse) {
	return func(t *testing.T, _ *adminFixture, r adminResponse) {
		t.Helper()
		if got := r.header.Get("Allow"); got != want {
			t.Errorf("Allow = %q, want %q", got, want)
		}
	}
}

func TestAdminHandler_NoTokenConfigured(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{})
	for _, auth := range []string{"", "Bearer ", "Bearer anything"} {
		r := f.do(t, "POST", "/admin/retry", auth, "", "")
		if r.status != http.StatusForbidden || !strings.Contains(r.raw, "no token configured") {
			t.Errorf("POST /retry with %q = %d %s, want 403", auth, r.status, r.raw)
		}
	}
	if r := f.do(t, "GET", "/admin/stats", "", "", ""); r.status != 200 {
		t.Errorf("GET /stats = %d, want 200: reads stay open", r.status)
	}
	adminWantStatus(func(f *adminFixture) queuemax.JobID { return f.failed }, queuemax.StatusFailed)(t, f, adminResponse{})
}

func TestAdminHandler_ProtectReads(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{Token: adminTestToken, ProtectReads: true})
	if r := f.do(t, "GET", "/admin/jobs", "", "", ""); r.status != 401 {
		t.Errorf("GET /jobs without token = %d, want 401", r.status)
	}
	if r := f.do(t, "GET", "/admin/jobs", "Bearer "+adminTestToken, "", ""); r.status != 200 {
		t.Errorf("GET /jobs with token = %d, want 200", r.status)
	}
	g := newAdminFixture(t, Options{ProtectReads: true})
	if r := g.do(t, "GET", "/admin/jobs", "", "", ""); r.status != 403 {
		t.Errorf("GET /jobs with reads protected and no token configured = %d, want 403", r.status)
	}
}

func TestAdminHandler_DefaultBodyLimit(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{Token: adminTestToken})
	payload := `{"task": "test.ok", "payload": {"x": "` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}}`
	if r := f.do(t, "POST", "/admin/enqueue", "Bearer "+adminTestToken, "", payload); r.status != 413 {
		t.Errorf("POST /enqueue with a body over 1 MiB = %d, want 413", r.status)
	}
	// Without a Content-Length the limit still holds while reading.
	req := httptest.NewRequestWithContext(t.Context(), "POST", "/admin/enqueue", io.MultiReader(strings.NewReader(payload)))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer "+adminTestToken)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	if rec.Code != 413 {
		t.Errorf("chunked POST /enqueue over 1 MiB = %d, want 413: %s", rec.Code, rec.Body)
	}
}

func TestAdminHandler_Mounting(t *testing.T) {
	t.Parallel()
	b := setup(t, queuemax.Config{Shards: 1})
	h := NewHandler(b.c, Options{})
	mux := http.NewServeMux()
	mux.Handle("/", h)                                            // at the root
	mux.Handle("/ops/admin/", http.StripPrefix("/ops/admin/", h)) // stripped with the slash
	mux.Handle("GET /v2/{rest...}", http.StripPrefix("/v2", h))   // behind a method pattern
	for _, path := range []string{"/stats", "/ops/admin/stats", "/v2/stats"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), "GET", path, nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"num_shards": 1`) {
			t.Errorf("GET %s = %d %s", path, rec.Code, rec.Body)
		}
	}
}

// TestAdminHandler_JobJSON pins the field names of a job in the admin API.
func TestAdminHandler_JobJSON(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{})
	r := f.do(t, "GET", fmt.Sprintf("/admin/jobs/%d", f.failed), "", "", "")
	var keys []string
	for k := range r.body {
		keys = append(keys, k)
	}
	want := []string{"attempts", "completed_at", "created_at", "error_type", "id", "last_error", "max_attempts",
		"payload", "priority", "queue", "retry_delay_ms", "shard", "snoozes", "started_at", "status", "task"}
	if diff := cmp.Diff(want, keys, adminSortStrings); diff != "" {
		t.Errorf("job JSON keys (-want +got):\n%s\n%s", diff, r.raw)
	}
}

var adminSortStrings = cmp.Transformer("sort", func(in []string) []string {
	out := append([]string(nil), in...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestAdminHandler_TagsAndTimeout: POST /enqueue takes a job's timeout,
// tags and metadata; GET /jobs shows them and filters by ?tag=; bad ones
// are a 400 naming the problem, storing nothing.
func TestAdminHandler_TagsAndTimeout(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{Token: adminTestToken})
	bearer := "Bearer " + adminTestToken
	r := f.do(t, "POST", "/admin/enqueue", bearer, "application/json",
		`{"task": "test.ok", "opts": {"timeout": "1.5s", "tags": ["vip", "eu"], "metadata": {"tenant": "acme"}}}`)
	if r.status != 201 {
		t.Fatalf("enqueue: %d %s", r.status, r.raw)
	}
	id := queuemax.JobID(r.body["job_id"].(float64))
	r = f.do(t, "GET", "/admin/jobs?tag=vip", "", "", "")
	js, _ := r.body["jobs"].([]any)
	if r.status != 200 || len(js) != 1 {
		t.Fatalf("jobs?tag=vip: %d %s; want the one tagged job", r.status, r.raw)
	}
	j := js[0].(map[string]any)
	if j["id"] != float64(id) || j["timeout_ms"] != 1500.0 || fmt.Sprint(j["tags"]) != "[vip eu]" {
		t.Errorf("job = %s; want id %d, timeout_ms 1500, tags [vip eu]", r.raw, id)
	}
	if r = f.do(t, "GET", "/admin/jobs?tag=nope", "", "", ""); r.status != 200 || strings.Contains(r.raw, `"id"`) {
		t.Errorf("jobs?tag=nope: %d %s; want none", r.status, r.raw)
	}
	if r = f.do(t, "GET", fmt.Sprintf("/admin/jobs/%d", id), "", "", ""); fmt.Sprint(r.body["metadata"]) != "map[tenant:acme]" {
		t.Errorf("job %d: %s; want its metadata", id, r.raw)
	}
	for body, want := range map[string]string{
		`{"task": "test.ok", "opts": {"tags": ["a b"]}}`:   `tag \"a b\" has a space`,
		`{"task": "test.ok", "opts": {"timeout": "-1s"}}`:  `opts.timeout`,
		`{"task": "test.ok", "opts": {"timeout": "soon"}}`: `opts.timeout`,
	} {
		if r = f.do(t, "POST", "/admin/enqueue", bearer, "application/json", body); r.status != 400 || !strings.Contains(r.raw, want) {
			t.Errorf("enqueue %s: %d %s; want 400 saying %s", body, r.status, r.raw, want)
		}
	}
	if all, _ := f.b.c.Jobs(f.b.ctx, queuemax.ListParams{}); len(all) != 3 {
		t.Errorf("%d jobs stored, want 3", len(all))
	}
}
