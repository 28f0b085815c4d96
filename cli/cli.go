// Package cli is the queuemax command line as a library: every operator
// subcommand (stats, list, enqueue, retry, cancel, queues, pause, resume, workflows, dlq, recover, purge, periodic,
// wait, workers, dashboard) and, for a binary built with a task registry, worker.
//
// A Go program cannot load a function by name, so the worker runs the
// handlers compiled into its binary. A worker binary is a main of one line
// over the generated registry:
//
//	package main
//
//	import (
//		"os"
//
//		"example.com/app/tasks"
//		"github.com/queuemax/queuemax/cli"
//	)
//
//	func main() { os.Exit(cli.Main(os.Args[1:], tasks.Handlers())) }
//
// Use a [Program] to name the binary or to put the tasks' dependencies in
// the context the workers run with. The command github.com/queuemax/queuemax/cmd/queuemax
// is the same command line without handlers; its package documentation
// describes every subcommand.
//
// Conventions: human tables by default and --json for scripts; errors go to
// standard error as one line that names the problem; the exit status is 0
// on success, 1 on failure and 2 for a usage error (an unknown subcommand
// or flag, a bad flag value, invalid JSON, an unknown task). Read-only
// commands open the data directory with [queuemax.Config].ReadOnly and
// never create it; commands that write refuse a directory that holds no
// queue unless --create is given (enqueue and worker only).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/queuemax/queuemax"
)

// Exit statuses returned by [Program.Run] and [Main].
const (
	ExitOK      = 0 // success
	ExitFailure = 1 // the command failed
	ExitUsage   = 2 // bad command line or input: nothing was changed
)

// Main runs the command line args (without the program name, as in
// os.Args[1:]) with the tasks of handlers and returns the exit status.
// Handlers may be nil: then the worker subcommand explains that it needs a
// registry. It is [Program.Run] with default settings.
func Main(args []string, handlers []queuemax.Handler) int {
	p := &Program{Handlers: handlers}
	return p.Run(context.Background(), args)
}

// Program is a queuemax command line. Its zero value is the operator
// command without tasks, reading os.Stdin, writing os.Stdout and
// os.Stderr and reading the environment with os.Getenv.
type Program struct {
	// Name is the program name shown in usage and error messages. Empty
	// means the base name of os.Args[0].
	Name string
	// Handlers are the tasks the binary can run, usually the generated
	// Handlers(). They give worker its tasks, let enqueue apply a task's
	// defaults and reject unknown task names, and let --task take a short
	// name (SendEmail or tasks.SendEmail).
	Handlers []queuemax.Handler
	// WorkerContext, when set, derives the context worker hands to
	// [queuemax.Client.Run], for example to carry the tasks' dependencies
	// (tasks.WithDeps). Cancelling the context it is given still drains.
	WorkerContext func(context.Context) context.Context
	// Configure, when set, adjusts every Config after the environment and
	// the flags have been applied (to add Hooks, say).
	Configure func(*queuemax.Config)
	// Metrics, when set, gives the dashboard command a GET /metrics
	// handler for the client it opened (the queuemax command sets
	// queuemaxprom.Handler). Nil: the dashboard serves no /metrics, and the
	// program's module needs no metrics library.
	Metrics func(*queuemax.Client) (http.Handler, error)
	// OpenPostgres, when set, opens the PostgreSQL store that --dsn or
	// QUEUE_MAX_DSN names, in schema (empty for the default), read-only
	// for the commands that only read. The queuemax command sets it to
	// queuemaxpg.Open (module github.com/queuemax/queuemax/queuemaxpg). Nil:
	// --dsn is an error, and the program's module needs no PostgreSQL
	// driver.
	OpenPostgres func(ctx context.Context, dsn, schema string, readOnly bool) (queuemax.Store, error)

	// Stdin, Stdout and Stderr default to the process's. Progress bars and
	// live status lines are drawn only when the stream is a terminal.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Run runs the command line args (without the program name) and returns
// the exit status: [ExitOK], [ExitFailure] or [ExitUsage]. On failure it
// has printed one line naming the problem to Stderr. SIGINT and SIGTERM
// cancel ctx for the running command: worker drains, and a second signal
// releases its running jobs to pending (no attempt spent) and stops it,
// also when SIGINT was ignored at start (nohup).
func (p *Program) Run(ctx context.Context, args []string) int {
	r := p.runner()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	r.stopSignals = stop
	cmd, err := r.run(ctx, args)
	return r.report(cmd, err)
}

// runner holds one invocation's streams and global flags.
type runner struct {
	name     string
	p        *Program
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	getenv   func(string) string
	handlers []queuemax.Handler

	// Global flags.
	dataDir    string
	dataDirSet bool
	shards     int
	dsn        string // --dsn
	schema     string // --schema
	queueMax   bool   // --queue-max-compatible

	// stopSignals stops the signal context; set by Program.Run, nil in
	// tests that build a runner directly (the worker then catches no
	// second signal itself).
	stopSignals func()
}

func (p *Program) runner() *runner {
	r := &runner{p: p, name: p.Name, stdin: p.Stdin, stdout: p.Stdout, stderr: p.Stderr, getenv: p.Getenv, handlers: p.Handlers}
	if r.name == "" {
		r.name = filepath.Base(os.Args[0])
	}
	if r.stdin == nil {
		r.stdin = os.Stdin
	}
	if r.stdout == nil {
		r.stdout = os.Stdout
	}
	if r.stderr == nil {
		r.stderr = os.Stderr
	}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	return r
}

// usageError is a bad command line or bad input: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// errHelp means help was printed on request: exit status 0.
var errHelp = errors.New("help requested")

// report prints err as one line and returns the exit status.
func (r *runner) report(cmd string, err error) int {
	if err == nil || errors.Is(err, errHelp) {
		return ExitOK
	}
	prefix := r.name
	if cmd != "" {
		prefix += " " + cmd
	}
	msg := strings.ReplaceAll(err.Error(), "queuemax: ", "")
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	fmt.Fprintf(r.stderr, "%s: %s\n", prefix, msg)
	if isUsage(err) {
		return ExitUsage
	}
	return ExitFailure
}

// isUsage reports whether err is the caller's fault: a bad flag, bad
// input data, or a bad configuration value.
func isUsage(err error) bool {
	var ue *usageError
	var le *queuemax.LineError
	switch {
	case errors.As(err, &ue), errors.As(err, &le):
		return true
	case errors.Is(err, queuemax.ErrInvalidConfig),
		errors.Is(err, queuemax.ErrInvalidPayload),
		errors.Is(err, queuemax.ErrInvalidPriority),
		errors.Is(err, queuemax.ErrInvalidRetries),
		errors.Is(err, queuemax.ErrInvalidShard):
		return true
	}
	return false
}

// run parses the global flags and runs the subcommand. It returns the
// subcommand's name for error messages.
func (r *runner) run(ctx context.Context, args []string) (string, error) {
	fs := r.newFlagSet("")
	if err := r.parse(fs, nil, args); err != nil {
		if errors.Is(err, errHelp) {
			r.mainUsage(r.stdout)
		}
		return "", err
	}
	args = fs.Args()
	if len(args) == 0 {
		r.mainUsage(r.stderr)
		return "", usagef("no command given")
	}
	name, rest := args[0], args[1:]
	if name == "help" {
		return r.help(rest)
	}
	c := lookup(name)
	if c == nil {
		hint := didYouMean(name)
		if hint == "" {
			hint = fmt.Sprintf(" (run %s help)", r.name)
		}
		return "", usagef("unknown command %q%s", name, hint)
	}
	return name, c.run(r, ctx, c, rest)
}

// help prints the usage of the command named in args, or of the program.
func (r *runner) help(args []string) (string, error) {
	if len(args) == 0 {
		r.mainUsage(r.stdout)
		return "", nil
	}
	c := lookup(args[0])
	if c == nil {
		return "help", usagef("unknown command %q%s", args[0], didYouMean(args[0]))
	}
	// Each command prints its own flags when asked for help.
	return args[0], c.run(r, context.Background(), c, []string{"--help"})
}
