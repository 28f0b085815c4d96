package queuemax_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/queuemax/queuemax"
)

type greetArgs struct {
	Name string `json:"name"`
}

// Example_run defines a task, enqueues three jobs and runs them.
func Example_run() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	var greeted []string
	greet := queuemax.Define("example.Greet", queuemax.TaskOptions{}, func(ctx context.Context, a greetArgs) error {
		mu.Lock()
		defer mu.Unlock()
		greeted = append(greeted, "hello "+a.Name)
		return nil
	})
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 2, Handlers: []queuemax.Handler{greet},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	done, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()
	task := queuemax.NewTask[greetArgs](c, "example.Greet", queuemax.TaskOptions{})
	for _, n := range []string{"ada", "grace", "linus"} {
		if _, err := task.Enqueue(ctx, greetArgs{Name: n}); err != nil {
			fmt.Println(err)
			return
		}
	}
	runDone := make(chan error)
	go func() { runDone <- c.Run(ctx) }()
	for range 3 {
		<-done
	}
	cancel()
	fmt.Println("run:", <-runDone)

	slices.Sort(greeted)
	for _, g := range greeted {
		fmt.Println(g)
	}
	// Output:
	// run: <nil>
	// hello ada
	// hello grace
	// hello linus
}

// ExampleClient_Enqueue shows input validation: payloads must be JSON
// objects and priorities 0–2.
func ExampleClient_Enqueue() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// No worker has published example.Raw in this fresh directory: say
	// that the name is meant (a producer whose workers run elsewhere).
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 1, AllowUnknownTasks: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	_, err = c.Enqueue(ctx, "example.Raw", []int{1, 2}, queuemax.Opts{})
	fmt.Println(err, errors.Is(err, queuemax.ErrInvalidPayload))
	_, err = c.Enqueue(ctx, "example.Raw", map[string]int{"n": 1}, queuemax.Opts{Priority: queuemax.Ptr(queuemax.Priority(7))})
	fmt.Println(err)
	_, err = c.Enqueue(ctx, "example.Raw", map[string]int{"n": 1}, queuemax.Opts{Priority: queuemax.Ptr(queuemax.PriorityHigh), MaxRetries: queuemax.Ptr(0)})
	fmt.Println(err)
	s, _ := c.Stats(ctx)
	fmt.Println("pending:", s.Pending)
	// Output:
	// queuemax: invalid payload: must be a JSON object, got array true
	// queuemax: invalid priority (want 0, 1 or 2): got 7
	// <nil>
	// pending: 1
}

// ExampleClient_Fail drives the queue by hand, as queue-max's pop_job,
// complete_job and fail_job do: a permanent error dead-letters the job at
// once.
func ExampleClient_Fail() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 1, AllowUnknownTasks: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	c.Enqueue(ctx, "example.Charge", map[string]int{"cents": 500}, queuemax.Opts{})
	jobs, _ := c.Claim(ctx, "worker-1", 10)
	out, err := c.Fail(ctx, jobs[0], queuemax.Permanent(errors.New("card declined")))
	fmt.Println("dead:", out.Dead, err)
	dl, _ := c.DeadLetters(ctx, queuemax.ListParams{})
	fmt.Printf("dead letter: %s %s %s\n", dl[0].Task, dl[0].Error, dl[0].Payload)
	n, _ := c.RetryFailed(ctx, -1)
	fmt.Println("requeued:", n)
	// Output:
	// dead: true <nil>
	// dead letter: example.Charge card declined {"cents":500}
	// requeued: 1
}
