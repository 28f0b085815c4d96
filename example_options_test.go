package queuemax_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/queuemax/queuemax"
)

// ExampleOpts_tags enqueues jobs with tags, metadata and their own timeout,
// lists them by tag, and shows a bad tag refused.
func ExampleOpts_tags() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	// The task's own default tags; Opts.Tags replaces them.
	report := queuemax.Define("example.Report", queuemax.TaskOptions{Tags: []string{"reports"}, MaxRetries: queuemax.Ptr(0)},
		func(ctx context.Context, a struct{ Slow bool }) error {
			if a.Slow {
				<-ctx.Done() // bounded by the job's own timeout
				return ctx.Err()
			}
			return nil
		})
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{report}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	t := queuemax.NewTask[struct{ Slow bool }](c, report.Name, report.Options)

	vip, _ := t.With(queuemax.Opts{Tags: []string{"vip", "eu"}, Metadata: map[string]any{"tenant": "acme"}}).Enqueue(ctx, struct{ Slow bool }{})
	plain, _ := t.Enqueue(ctx, struct{ Slow bool }{})
	for _, tag := range []string{"vip", "reports"} {
		jobs, _ := c.Jobs(ctx, queuemax.ListParams{Tag: tag})
		fmt.Println(tag+":", len(jobs), "job", jobs[0].ID == vip, jobs[0].ID == plain, jobs[0].Tags)
	}
	j, _ := c.Job(ctx, vip)
	var meta map[string]string
	_ = json.Unmarshal(j.Metadata, &meta)
	fmt.Println("metadata:", meta["tenant"])

	_, err = t.With(queuemax.Opts{Tags: []string{"two words"}}).Enqueue(ctx, struct{ Slow bool }{})
	fmt.Println(errors.Is(err, queuemax.ErrInvalidTag), err)

	failed, unsubscribe := c.Subscribe(queuemax.EventFailed)
	defer unsubscribe()
	go c.Run(ctx)
	slow, _ := t.With(queuemax.Opts{Timeout: 20 * time.Millisecond}).Enqueue(ctx, struct{ Slow bool }{Slow: true})
	<-failed
	j, _ = c.Job(ctx, slow)
	fmt.Println("slow job:", j.Status, j.Timeout, "-", j.LastError)
	// Output:
	// vip: 1 job true false [vip eu]
	// reports: 1 job false true [reports]
	// metadata: acme
	// true queuemax: invalid tag: tag "two words" has a space, comma or control character
	// slow job: failed 20ms - job exceeded 20ms timeout: context deadline exceeded
}
