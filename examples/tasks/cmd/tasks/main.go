// Command tasks is the worker binary of the example tasks: the whole
// queuemax command line (see github.com/queuemax/queuemax/cmd/queuemax)
// plus worker, which runs the tasks of package tasks from the registry
// that queuemax-gen generated.
//
//	go run ./examples/tasks/cmd/tasks enqueue --create --task SendEmail --payload '{"to":"a@example.com","subject":"Hi"}'
//	go run ./examples/tasks/cmd/tasks worker --concurrency 8
//
// Its SendEmail "sends" by logging at info level (QUEUE_MAX_LOG_LEVEL=INFO
// shows it); CallWebhook makes real HTTP requests; CleanupOldData has
// nothing to trim; PingMonitor posts to $MONITOR_URL, if set.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/queuemax/queuemax/cli"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/queuemaxenv"
)

func main() {
	_, level, _ := queuemaxenv.Config(os.Getenv) // the CLI reports a bad environment
	mailer := logMailer{slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))}
	p := &cli.Program{
		Name:     "tasks",
		Handlers: tasks.Handlers(),
		WorkerContext: func(ctx context.Context) context.Context {
			return tasks.WithDeps(ctx, tasks.Deps{Mailer: mailer, MonitorURL: os.Getenv("MONITOR_URL")})
		},
	}
	os.Exit(p.Run(context.Background(), os.Args[1:]))
}

// logMailer delivers messages to a log.
type logMailer struct{ log *slog.Logger }

// Send logs m.
func (l logMailer) Send(ctx context.Context, m tasks.Message) error {
	l.log.InfoContext(ctx, "email sent", "to", m.To, "subject", m.Subject)
	return nil
}
