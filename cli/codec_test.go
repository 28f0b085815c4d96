package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax"
)

// issuePayload is the struct of issue 20: a field encoding/json omits when
// it is zero.
type issuePayload struct {
	Seq  int    `json:"seq"`
	Note string `json:"note,omitempty"`
}

// oldRefusal is the error the strict check of earlier versions
// dead-lettered such payloads with.
const oldRefusal = `queuemax: payload of task t.P: field "note": missing (every non-pointer parameter is required)`

// runUntil runs a client of dir with handlers until n handler calls were
// reported on got, then stops it.
func runUntil[T any](t *testing.T, dir string, handlers []queuemax.Handler, got <-chan T, n int) []T {
	t.Helper()
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Handlers: handlers, AllowUnknownTasks: true,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	var out []T
	for len(out) < n {
		select {
		case v := <-got:
			out = append(out, v)
		case <-time.After(30 * time.Second):
			t.Fatalf("got %d of %d handler calls: %v", len(out), n, out)
		}
	}
	return out
}

// TestIssuePayload_CLIAndDLQRequeue: jobs the old strict check
// dead-lettered are re-queued as they are by dlq requeue with a filter on
// the error text and the task, and run, with their value intact, next to
// one the CLI enqueued; dead letters outside the filter stay.
func TestIssuePayload_CLIAndDLQRequeue(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	d := []string{"--data-dir", dir}
	// The dead letters of an older version, and one of another cause.
	dead := make(chan string, 8)
	old := queuemax.Handler{Name: "t.P", Func: func(_ context.Context, j *queuemax.Job) (any, error) {
		dead <- string(j.Payload)
		return nil, queuemax.Permanent(errors.New(oldRefusal))
	}}
	other := queuemax.Handler{Name: "t.Q", Func: func(_ context.Context, j *queuemax.Job) (any, error) {
		dead <- string(j.Payload)
		return nil, queuemax.Permanent(errors.New("every non-pointer parameter is required, said t.Q"))
	}}
	withClient(t, dir, 2, func(c *queuemax.Client) {
		for _, p := range []string{`{"seq":2}`, `{"seq":3}`} {
			if _, err := c.Enqueue(t.Context(), "t.P", json.RawMessage(p), queuemax.Opts{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Enqueue(t.Context(), "t.Q", json.RawMessage(`{}`), queuemax.Opts{}); err != nil {
			t.Fatal(err)
		}
	})
	runUntil(t, dir, []queuemax.Handler{old, other}, dead, 3)
	if got := listJobs(t, queuemaxBin, append(d, "dlq", "list")...); len(got) != 3 {
		t.Fatalf("dead letters = %v, want 3", got)
	}
	// The CLI's own enqueue of the struct, its optional field left out.
	ok(t, qm(t, append(d, "enqueue", "--any-task", "--task", "t.P", "--payload", `{"seq":1}`)...), "enqueue")

	res := ok(t, qm(t, append(d, "dlq", "requeue", "--error", "missing (every non-pointer parameter is required)", "--task", "t.P", "--json")...), "dlq requeue")
	var out struct {
		Requeued int `json:"requeued"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Requeued != 2 {
		t.Fatalf("dlq requeue: %s (%v), want 2 re-queued", res.stdout, err)
	}
	left := listJobs(t, queuemaxBin, append(d, "dlq", "list")...)
	if len(left) != 1 || !strings.HasSuffix(left[0]["task"].(string), "t.Q") {
		t.Errorf("dead letters left = %v, want t.Q's only", left)
	}

	got := make(chan issuePayload, 8)
	h := queuemax.Define("t.P", queuemax.TaskOptions{}, func(_ context.Context, p issuePayload) error {
		got <- p
		return nil
	})
	seen := map[int]bool{}
	for _, p := range runUntil(t, dir, []queuemax.Handler{h}, got, 3) {
		if p.Note != "" || seen[p.Seq] || p.Seq < 1 || p.Seq > 3 {
			t.Errorf("handler got %+v", p)
		}
		seen[p.Seq] = true
	}
	if st := listJobs(t, queuemaxBin, append(d, "list", "--status", "failed,pending", "--task", "t.P")...); len(st) != 0 {
		t.Errorf("failed or pending jobs of t.P left: %v", st)
	}
	if st := listJobs(t, queuemaxBin, append(d, "list", "--status", "pending,failed")...); len(st) != 1 || st[0]["task"] != "t.Q" {
		t.Errorf("list --status pending,failed = %v, want t.Q's failed job", st)
	}
}

// TestEnqueue_CLIChecksPublishedSchema: the registry-less CLI refuses a
// payload the live worker would dead-letter, by the schema it publishes.
func TestEnqueue_CLIChecksPublishedSchema(t *testing.T) {
	t.Parallel()
	dir := newQueue(t, 2)
	d := []string{"--data-dir", dir}
	type invoice struct {
		AmountCents int64 `json:"amount_cents"`
	}
	type args struct {
		Inv invoice `json:"inv"`
	}
	got := make(chan args, 4)
	h := queuemax.Define("billing.Charge", queuemax.TaskOptions{}, func(_ context.Context, a args) error { got <- a; return nil })
	c, err := queuemax.Open(t.Context(), queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{h},
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ws, err := c.Workers(t.Context())
		if err == nil && len(ws) == 1 && ws[0].Schemas["billing.Charge"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never published its schema: %v, %v", ws, err)
		}
		time.Sleep(10 * time.Millisecond) // polling the registry for Run's first write
	}
	wantFail(t, qm(t, append(d, "enqueue", "--task", "Charge", "--payload", `{"inv":{"amount_cents":"oops"}}`)...), 2, `field "inv.amount_cents"`)
	wantFail(t, qm(t, append(d, "enqueue", "--task", "Charge", "--payload", `{"inv":{}}`)...), 2, `field "inv.amount_cents"`, "missing")
	ok(t, qm(t, append(d, "enqueue", "--task", "Charge", "--payload", `{"inv":{"amount_cents":125}}`)...), "enqueue")
	select {
	case a := <-got:
		if a.Inv.AmountCents != 125 {
			t.Errorf("handler got %+v", a)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the good job did not run")
	}
	// list --task takes the short name, as enqueue does.
	if jobs := listJobs(t, queuemaxBin, append(d, "list", "--task", "Charge", "--status", "completed,pending,processing")...); len(jobs) != 1 {
		t.Errorf("list --task Charge = %v, want the one job", jobs)
	}
}
