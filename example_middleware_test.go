package queuemax_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"

	"github.com/queuemax/queuemax"
)

type requestIDKey struct{}

// Example_middleware carries a request ID from the enqueueing request to
// the job's execution: an enqueue middleware writes it into the job's
// metadata, and a work middleware reads it back and wraps the handler (to
// log, trace or authorize).
func Example_middleware() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	stamp := queuemax.EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*queuemax.InsertJob,
		next func(context.Context) ([]queuemax.JobID, error)) ([]queuemax.JobID, error) {
		if id, ok := ctx.Value(requestIDKey{}).(string); ok {
			for _, j := range jobs {
				if err := j.SetMetadata("request_id", id); err != nil {
					return nil, err
				}
			}
		}
		return next(ctx)
	})
	logRuns := queuemax.WorkMiddlewareFunc(func(ctx context.Context, job *queuemax.Job,
		next func(context.Context) (any, error)) (any, error) {
		var meta struct {
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal(job.Metadata, &meta)
		fmt.Printf("start %s (request %s, attempt %d)\n", job.Task, meta.RequestID, job.Attempts)
		result, err := next(ctx)
		fmt.Printf("end %s: err=%v\n", job.Task, err)
		return result, err
	})

	greet := queuemax.Define("example.Greet", queuemax.TaskOptions{}, func(ctx context.Context, a greetArgs) error {
		fmt.Println("hello", a.Name)
		return nil
	})
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 2, Handlers: []queuemax.Handler{greet},
		Middleware: []queuemax.JobMiddleware{stamp, logRuns}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	done, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()

	reqCtx := context.WithValue(ctx, requestIDKey{}, "req-42")
	if _, err := c.Enqueue(reqCtx, "example.Greet", greetArgs{Name: "ada"}, queuemax.Opts{}); err != nil {
		fmt.Println(err)
		return
	}
	runDone := make(chan error)
	go func() { runDone <- c.Run(ctx) }()
	<-done
	cancel()
	fmt.Println("run:", <-runDone)
	// Output:
	// start example.Greet (request req-42, attempt 1)
	// hello ada
	// end example.Greet: err=<nil>
	// run: <nil>
}
