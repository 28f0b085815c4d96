package queuemax_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/queuemax/queuemax"
)

// Example_unique enqueues a task that is unique by its arguments
// (//queuemax:task unique=args): a second enqueue of the same arguments
// inserts nothing and returns the waiting job's ID; EnqueueResult and
// EnqueueManyResults tell the two apart. Once the job has run, its key is
// free again.
func Example_unique() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	type syncArgs struct {
		User int64 `json:"user"`
	}
	syncUser := queuemax.Define("example.SyncUser", queuemax.TaskOptions{Unique: queuemax.UniqueOpts{ByArgs: true}},
		func(ctx context.Context, a syncArgs) error { return nil })
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{syncUser},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	task := queuemax.NewTask[syncArgs](c, syncUser.Name, syncUser.Options)

	first, _ := task.Enqueue(ctx, syncArgs{User: 42})
	again, err := task.Enqueue(ctx, syncArgs{User: 42}) // the same ID, no error
	fmt.Println("same job:", again == first, err)
	r, _ := task.EnqueueResult(ctx, syncArgs{User: 42})
	fmt.Println("duplicate:", r.Duplicate)

	rs, _ := task.EnqueueManyResults(ctx, []syncArgs{{User: 42}, {User: 7}, {User: 7}})
	for _, r := range rs {
		fmt.Println("batch: duplicate", r.Duplicate)
	}

	// A job that completes frees its key (completed is not among the
	// default counted statuses: pending, scheduled, processing).
	done, unsubscribe := c.Subscribe(queuemax.EventCompleted)
	defer unsubscribe()
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx) }()
	<-done
	<-done
	r, _ = task.EnqueueResult(ctx, syncArgs{User: 42})
	fmt.Println("after it ran: duplicate", r.Duplicate, "new job", r.ID != first)
	stop()
	<-ran

	// Output:
	// same job: true <nil>
	// duplicate: true
	// batch: duplicate true
	// batch: duplicate false
	// batch: duplicate true
	// after it ran: duplicate false new job true
}

// ExampleUniqueOpts_byKey makes jobs unique by a key the caller picks, per
// day: one report per customer per day, whatever its other arguments, and
// kept blocking after it succeeded (completed counts).
func ExampleUniqueOpts_byKey() {
	dir, _ := os.MkdirTemp("", "queuemax-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	type reportArgs struct {
		Customer string `json:"customer"`
		Format   string `json:"format"`
	}
	report := queuemax.Define("example.Report", queuemax.TaskOptions{Unique: queuemax.UniqueOpts{
		ByKey:    true,
		ByPeriod: 24 * time.Hour,
		ByState:  []queuemax.Status{queuemax.StatusPending, queuemax.StatusScheduled, queuemax.StatusProcessing, queuemax.StatusCompleted},
	}}, func(ctx context.Context, a reportArgs) error { return nil })
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Handlers: []queuemax.Handler{report},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	task := queuemax.NewTask[reportArgs](c, report.Name, report.Options)

	tomorrow := time.Now().UTC().Truncate(24 * time.Hour).Add(36 * time.Hour)
	at := task.With(queuemax.Opts{RunAt: tomorrow})
	a, _ := at.With(queuemax.Opts{UniqueKey: "acme"}).EnqueueResult(ctx, reportArgs{Customer: "acme", Format: "pdf"})
	b, _ := at.With(queuemax.Opts{UniqueKey: "acme"}).EnqueueResult(ctx, reportArgs{Customer: "acme", Format: "csv"})
	o, _ := at.With(queuemax.Opts{UniqueKey: "globex"}).EnqueueResult(ctx, reportArgs{Customer: "globex"})
	fmt.Println("acme again:", b.Duplicate, b.ID == a.ID)
	fmt.Println("globex:", o.Duplicate)
	_, err = task.Enqueue(ctx, reportArgs{Customer: "acme"})
	fmt.Println(err)
	// Output:
	// acme again: true true
	// globex: false
	// queuemax: invalid unique options: task "example.Report" is unique by key: set Opts.UniqueKey
}
