package queuemax_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxhttp"
)

// TestPostgres_CountsAndStats checks the counting features on the
// PostgreSQL store: Stats' per-task backlog, warnings and uptime, the
// queue-size alert, JobCounts (what queuemaxprom and queuemaxotel export)
// and the dashboard's per-task table.
func TestPostgres_CountsAndStats(t *testing.T) {
	t.Parallel()
	p := setupPGTx(t)
	ctx := t.Context()
	c, err := queuemax.Open(ctx, queuemax.Config{Store: openPG(t, p.dsn, p.schema), AlertThreshold: 2, AllowUnknownTasks: true,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("Open(Store): %v", err)
	}
	t.Cleanup(func() { c.Close() })
	alerts, unsubscribe := c.Subscribe(queuemax.EventAlert)
	defer unsubscribe()

	// One job of t.dead dies; then three of t.a wait and one t.b is
	// scheduled for later.
	if _, err := c.Enqueue(ctx, "t.dead", map[string]int{}, queuemax.Opts{}); err != nil {
		t.Fatal(err)
	}
	jobs, err := c.Claim(ctx, "w1", 1)
	if err != nil || len(jobs) != 1 || jobs[0].Task != "t.dead" {
		t.Fatalf("Claim = %v, %v; want the t.dead job", jobs, err)
	}
	if _, err := c.Fail(ctx, jobs[0], queuemax.Permanent(errors.New("boom"))); err != nil {
		t.Fatal(err)
	}
	batch := []queuemax.EnqueueParams{{Task: "t.a", Payload: map[string]int{}}, {Task: "t.a", Payload: map[string]int{}},
		{Task: "t.a", Payload: map[string]int{}}, {Task: "t.b", Payload: map[string]int{}, Opts: queuemax.Opts{RunAt: time.Now().Add(time.Hour)}}}
	if _, err := c.EnqueueMany(ctx, batch); err != nil {
		t.Fatal(err)
	}

	select {
	case e := <-alerts:
		if e.Pending != 4 || e.Threshold != 2 {
			t.Errorf("alert = pending %d threshold %d, want 4 over 2", e.Pending, e.Threshold)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no queue-size alert after 4 waiting jobs over a threshold of 2")
	}

	s, err := c.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	wantTasks := map[string]queuemax.TaskInfo{"t.a": {Pending: 3}, "t.b": {Scheduled: 1}}
	if diff := cmp.Diff(wantTasks, s.Tasks); diff != "" {
		t.Errorf("Stats.Tasks (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.Contains(w, "t.a has 3 pending jobs") }) {
		t.Errorf("Stats.Warnings = %q, want one for t.a's 3 pending jobs with no worker", s.Warnings)
	}
	if s.UptimeSeconds <= 0 || s.UptimeSeconds > 3600 {
		t.Errorf("Stats.UptimeSeconds = %v, want the seconds since the schema was created", s.UptimeSeconds)
	}

	counts, err := c.JobCounts(ctx)
	if err != nil {
		t.Fatalf("JobCounts: %v", err)
	}
	type row struct {
		Task   string
		Status queuemax.Status
	}
	got := map[row]int64{}
	for _, n := range counts {
		got[row{n.Task, n.Status}] += n.Count
	}
	want := map[row]int64{{"t.a", queuemax.StatusPending}: 3, {"t.b", queuemax.StatusScheduled}: 1, {"t.dead", queuemax.StatusFailed}: 1}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("JobCounts by task and status (-want +got):\n%s", diff)
	}

	rec := httptest.NewRecorder()
	queuemaxhttp.NewHandler(c, queuemaxhttp.Options{}).ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/tasks", nil))
	type task struct {
		Task        string `json:"task"`
		Pending     int64  `json:"pending"`
		Scheduled   int64  `json:"scheduled"`
		Failed      int64  `json:"failed"`
		DeadLetters int64  `json:"dead_letters"`
	}
	var body struct {
		Tasks []task `json:"tasks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /tasks = %d %s (%v)", rec.Code, rec.Body, err)
	}
	wantTable := []task{{Task: "t.a", Pending: 3}, {Task: "t.b", Scheduled: 1}, {Task: "t.dead", Failed: 1, DeadLetters: 1}}
	if diff := cmp.Diff(wantTable, body.Tasks); diff != "" {
		t.Errorf("dashboard tasks (-want +got):\n%s", diff)
	}
}
