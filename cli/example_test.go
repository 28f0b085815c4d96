package cli_test

import (
	"context"
	"fmt"
	"os"

	"github.com/queuemax/queuemax/cli"
	"github.com/queuemax/queuemax/examples/tasks"
)

// A worker binary is a Program over the generated handlers; here it runs
// in-process with its output on standard output.
func ExampleProgram() {
	dir, err := os.MkdirTemp("", "queuemax-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	p := &cli.Program{
		Name:     "tasks",
		Handlers: tasks.Handlers(),
		Stdout:   os.Stdout,
		Stderr:   os.Stdout,
		Getenv:   func(string) string { return "" }, // ignore the environment
	}
	ctx := context.Background()
	run := func(args ...string) {
		fmt.Println("exit status", p.Run(ctx, args))
	}
	run("stats", "--data-dir", "no-such-dir") // read-only commands create nothing
	run = func(args ...string) {
		fmt.Println("exit status", p.Run(ctx, append([]string{"--data-dir", dir + "/data"}, args...)))
	}
	run("enqueue", "--create", "--task", "SendEmail", "--key", "1", "--payload", `{"to":"a@example.com","subject":"Hi"}`)
	run("enqueue", "--task", "SendMail")
	run("retry")
	// Output:
	// tasks stats: data dir no-such-dir does not exist
	// exit status 1
	// enqueued tasks.SendEmail job 1025 on shard 1
	// exit status 0
	// tasks enqueue: unknown task "SendMail" (this binary runs: tasks.CallWebhook, tasks.CleanupOldData, tasks.GenerateReport, tasks.PingMonitor, tasks.SendEmail)
	// exit status 2
	// retried 0 failed jobs across all shards
	// exit status 0
}
