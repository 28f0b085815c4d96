package queuemaxhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// The admin API checks enqueues as Client.Enqueue does, lists live workers,
// and keeps unique jobs unique.

type mailArgs struct {
	To   string             `json:"to"`
	CC   *string            `json:"cc"`
	N    int                `json:"n"`
	Tags []string           `json:"tags"`
	Meta map[string]int     `json:"meta"`
	Msg  struct{ S string } `json:"msg"`
}

func nopMail(context.Context, mailArgs) error { return nil }

func pendingJobs(t *testing.T, c *queuemax.Client) int64 {
	t.Helper()
	s, err := c.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s.Pending + s.Scheduled
}

func TestAdmin_EnqueueChecksAndWorkers(t *testing.T) {
	t.Parallel()
	const task = "example.com/jobs.Mail"
	b := setup(t, queuemax.Config{Shards: 1, Handlers: []queuemax.Handler{queuemax.Define(task, queuemax.TaskOptions{}, nopMail)},
		HeartbeatInterval: 50 * time.Millisecond, StuckTimeout: 10 * time.Second})
	srv := httptest.NewServer(NewHandler(b.c, Options{Token: "tok"}))
	defer srv.Close()
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(b.ctx, method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, out := do("POST", "/enqueue", `{"task": "Mail", "payload": {"to": "a", "n": "x", "tags": [], "meta": {}, "msg": {}}}`)
	if code != 400 || !strings.Contains(out["error"].(string), `field "n"`) {
		t.Errorf("bad payload: %d %v, want 400 naming the field", code, out)
	}
	code, out = do("POST", "/enqueue", `{"task": "Mial", "payload": {}}`)
	if code != 400 || !strings.Contains(out["error"].(string), `did you mean "`+task+`"`) {
		t.Errorf("unknown task: %d %v", code, out)
	}
	if n := pendingJobs(t, b.c); n != 0 {
		t.Errorf("refused enqueues stored %d jobs", n)
	}
	code, out = do("POST", "/enqueue", `{"task": "Mail", "payload": {"to": "a", "n": 1, "tags": [], "meta": {}, "msg": {"S": ""}}}`)
	if code != 201 {
		t.Fatalf("good enqueue: %d %v", code, out)
	}
	if j, err := b.c.Job(b.ctx, queuemax.JobID(out["job_id"].(float64))); err != nil || j.Task != task {
		t.Errorf("stored job = %+v, %v; want the full task name", j, err)
	}

	run(t, b.c)
	waitFor(t, "the worker in GET /workers", func() bool {
		code, out := do("GET", "/workers", "")
		ws, _ := out["workers"].([]any)
		return code == 200 && len(ws) == 1
	})
}

// TestAdminHandler_Unique: POST /enqueue with opts.unique_key creates one
// job (201), answers a duplicate with 200 and "duplicate": true, and the
// job's JSON carries its unique_key.
func TestAdminHandler_Unique(t *testing.T) {
	t.Parallel()
	f := newAdminFixture(t, Options{Token: adminTestToken})
	bearer := "Bearer " + adminTestToken
	body := `{"task": "test.ok", "payload": {"n": 5}, "opts": {"unique_key": "nightly"}}`
	first := f.do(t, "POST", "/admin/enqueue", bearer, "application/json", body)
	if first.status != 201 || first.body["duplicate"] != nil {
		t.Fatalf("first enqueue: %d %s; want 201 without duplicate", first.status, first.raw)
	}
	again := f.do(t, "POST", "/admin/enqueue", bearer, "application/json", body)
	if again.status != 200 || again.body["duplicate"] != true || again.body["job_id"] != first.body["job_id"] {
		t.Errorf("second enqueue: %d %s; want 200, duplicate of %v", again.status, again.raw, first.body["job_id"])
	}
	id := queuemax.JobID(first.body["job_id"].(float64))
	job := f.do(t, "GET", "/admin/jobs/"+id.String(), bearer, "", "")
	if key, _ := job.body["unique_key"].(string); len(key) != 64 {
		t.Errorf("GET /jobs/%s: unique_key %v; want the 64-digit key\n%s", id, job.body["unique_key"], job.raw)
	}
	plain := f.do(t, "GET", "/admin/jobs/"+f.pending.String(), bearer, "", "")
	if _, ok := plain.body["unique_key"]; ok {
		t.Errorf("plain job has a unique_key: %s", plain.raw)
	}
}

// waitFor polls cond with a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// TestAdminHandler_EnqueueResolvesAgainstTheCatalogue: the admin API of a
// producer without the task's handler resolves a short name against the
// store's task catalogue, with no worker live: before anything published
// the task the name is refused (400, nothing stored) unless
// allow_unknown_task says so; after, it is stored under the full name.
func TestAdminHandler_EnqueueResolvesAgainstTheCatalogue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prod := setup(t, queuemax.Config{Dir: dir, Shards: 2})
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", NewHandler(prod.c, Options{Token: adminTestToken})))
	f := &adminFixture{b: prod, h: mux}
	bearer := "Bearer " + adminTestToken
	post := func(body string) adminResponse {
		t.Helper()
		return f.do(t, "POST", "/admin/enqueue", bearer, "application/json", body)
	}
	if r := post(`{"task": "SendEmail", "payload": {"to": "a"}}`); r.status != 400 || !strings.Contains(r.raw, `unknown task \"SendEmail\"`) {
		t.Fatalf("enqueue before any task was published = %d %s; want 400 unknown task", r.status, r.raw)
	}
	if r := post(`{"task": "later.Task", "payload": {}, "opts": {"allow_unknown_task": true}}`); r.status != 201 || r.body["task"] != "later.Task" {
		t.Fatalf("enqueue with allow_unknown_task = %d %s; want 201 stored as given", r.status, r.raw)
	}
	// A task binary publishes its tasks (as Run does), then stops.
	h := queuemax.Define("tasks.SendEmail", queuemax.TaskOptions{}, func(context.Context, mailArgs) error { return nil })
	w := setup(t, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{h}})
	if err := w.c.PublishTasks(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.c.Close()
	r := post(`{"task": "SendEmail", "payload": {"to": "a"}}`)
	if r.status != 201 || r.body["task"] != "tasks.SendEmail" {
		t.Fatalf("enqueue SendEmail after the catalogue knows tasks.SendEmail = %d %s; want 201 as tasks.SendEmail", r.status, r.raw)
	}
	if r := post(`{"task": "SendEmial", "payload": {}}`); r.status != 400 || !strings.Contains(r.raw, `did you mean \"tasks.SendEmail\"`) {
		t.Errorf("misspelt enqueue = %d %s; want 400 with a suggestion", r.status, r.raw)
	}
}
