package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
)

// fakeWebhooks answers webhook calls in process: the status is the last
// path element of the URL, so https://hooks.example/ok/200 succeeds and
// https://hooks.example/gone/404 fails. No request leaves the process.
type fakeWebhooks struct{}

func (fakeWebhooks) RoundTrip(r *http.Request) (*http.Response, error) {
	code := http.StatusOK
	if i := strings.LastIndexByte(r.URL.Path, '/'); i >= 0 {
		fmt.Sscan(r.URL.Path[i+1:], &code)
	}
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{},
		Body:       io.NopCloser(strings.NewReader("")),
		Request:    r,
	}, nil
}

// tally counts finished jobs by task name.
type tally map[string]*struct{ completed, failed int }

func (t tally) add(task string, failed bool) {
	if t[task] == nil {
		t[task] = &struct{ completed, failed int }{}
	}
	if failed {
		t[task].failed++
	} else {
		t[task].completed++
	}
}

// runUntilFinished runs c until every job in ids has completed or failed
// for good, then stops Run, waits for it to return and counts how the
// jobs ended. (A completed job without a result is deleted at once, so
// events, not Stats, tell how many completed.)
func runUntilFinished(ctx context.Context, c *queuemax.Client, ids ...queuemax.JobID) (tally, error) {
	left := map[queuemax.JobID]bool{}
	for _, id := range ids {
		left[id] = true
	}
	// Subscribe before Run, with room for every event these jobs can
	// emit, so that none is missed or dropped.
	events, unsubscribe := c.SubscribeConfig(&queuemax.SubscribeConfig{ChanSize: 8*len(ids) + 64,
		Kinds: []queuemax.EventKind{queuemax.EventCompleted, queuemax.EventFailed}})
	defer unsubscribe()

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(runCtx) }()
	counts := tally{}
	for len(left) > 0 {
		select {
		case e := <-events:
			if left[e.JobID] {
				delete(left, e.JobID)
				counts.add(e.Task, e.Kind == queuemax.EventFailed)
			}
		case err := <-ran:
			return nil, fmt.Errorf("run returned early: %v", err)
		}
	}
	stop()
	if err := <-ran; err != nil {
		return nil, err
	}
	return counts, nil
}

// Example enqueues typed jobs of every kind, processes them on the
// embedded SQLite runtime and prints what happened.
func Example() {
	dir, err := os.MkdirTemp("", "queuemax-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	outbox := &tasks.Outbox{}
	ctx := tasks.WithDeps(context.Background(), tasks.Deps{
		Mailer: outbox,
		HTTP:   &http.Client{Transport: fakeWebhooks{}},
	})
	c, err := queuemax.Open(ctx, queuemax.Config{
		Dir:      dir,
		Shards:   2,
		Handlers: tasks.Handlers(),
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	t := tasks.New(c)
	var ids []queuemax.JobID
	enqueue := func(id queuemax.JobID, err error) {
		if err != nil {
			fmt.Println("enqueue:", err)
			return
		}
		ids = append(ids, id)
	}
	enqueue(t.SendEmail.Delay(ctx, "ada@example.com", "Welcome"))
	enqueue(t.SendEmail.With(queuemax.Opts{Priority: queuemax.Ptr(queuemax.PriorityLow)}).Delay(ctx, "grace@example.com", "Digest"))
	mapped, err := t.SendEmail.Map(ctx, []string{"alan@example.com", "barbara@example.com"}, "Newsletter")
	if err != nil {
		fmt.Println("map:", err)
	}
	ids = append(ids, mapped...)
	reportID, err := t.GenerateReport.Delay(ctx, 42, "2026-03")
	enqueue(reportID, err)
	enqueue(t.CallWebhook.Delay(ctx, "https://hooks.example/ok/200", map[string]string{"event": "signup"}))
	enqueue(t.CallWebhook.Delay(ctx, "https://hooks.example/gone/404", map[string]string{"event": "signup"}))

	counts, err := runUntilFinished(ctx, c, ids...)
	if err != nil {
		fmt.Println("run:", err)
		return
	}

	for _, m := range outbox.Messages() {
		fmt.Printf("sent %q to %s\n", m.Subject, m.To)
	}
	report, err := t.GenerateReport.Result(ctx, reportID)
	fmt.Printf("report: %+v, err=%v\n", report, err)
	for _, name := range []string{t.SendEmail.Name(), t.GenerateReport.Name(), t.CallWebhook.Name()} {
		n := counts[name]
		fmt.Printf("%s: %d completed, %d failed\n", strings.TrimPrefix(name, "github.com/queuemax/queuemax/examples/"), n.completed, n.failed)
	}
	st, err := t.CallWebhook.Stats(ctx)
	fmt.Printf("webhook jobs stored: %d failed, %d pending, err=%v\n", st.Failed, st.Pending, err)
	// Output:
	// sent "Welcome" to ada@example.com
	// sent "Newsletter" to alan@example.com
	// sent "Newsletter" to barbara@example.com
	// sent "Digest" to grace@example.com
	// report: {UserID:42 Month:2026-03 Orders:5 TotalCents:6250}, err=<nil>
	// tasks.SendEmail: 4 completed, 0 failed
	// tasks.GenerateReport: 1 completed, 0 failed
	// tasks.CallWebhook: 1 completed, 1 failed
	// webhook jobs stored: 1 failed, 0 pending, err=<nil>
}

// ExampleSendEmailTask_Call runs a task synchronously, without a client:
// the arguments still make the JSON round trip a worker would make.
func ExampleSendEmailTask_Call() {
	outbox := &tasks.Outbox{}
	ctx := tasks.WithDeps(context.Background(), tasks.Deps{Mailer: outbox})
	var t tasks.Tasks // unbound handles: Call works, enqueues do not

	err := t.SendEmail.Call(ctx, "ada@example.com", "Hello")
	fmt.Println("call:", err)
	fmt.Println("sent:", len(outbox.Messages()))

	_, err = t.SendEmail.Delay(ctx, "ada@example.com", "Hello")
	fmt.Println("delay:", errors.Is(err, queuemax.ErrNotBound))
	// Output:
	// call: <nil>
	// sent: 1
	// delay: true
}

// ExampleGenerateReportTask_Call gets a task's result synchronously.
func ExampleGenerateReportTask_Call() {
	var t tasks.Tasks
	r, err := t.GenerateReport.Call(context.Background(), 7, "2026-01")
	fmt.Printf("%+v %v\n", r, err)
	// Output:
	// {UserID:7 Month:2026-01 Orders:3 TotalCents:3750} <nil>
}

// ExampleCallWebhookTask_Call shows how a webhook's HTTP status reaches
// the caller: as a *tasks.StatusError, marked permanent for a 404.
func ExampleCallWebhookTask_Call() {
	ctx := tasks.WithDeps(context.Background(), tasks.Deps{HTTP: &http.Client{Transport: fakeWebhooks{}}})
	var t tasks.Tasks
	err := t.CallWebhook.Call(ctx, "https://hooks.example/gone/404", map[string]string{"event": "signup"})
	var status *tasks.StatusError
	var permanent *queuemax.PermanentError
	fmt.Println(errors.As(err, &status), status.StatusCode(), errors.As(err, &permanent))
	// Output:
	// true 404 true
}
