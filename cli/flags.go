package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/internal/suggest"
)

// command is one subcommand.
type command struct {
	name    string
	args    string // what follows the name in the usage line
	summary string // one line for the command list
	help    string // paragraphs for --help
	run     func(r *runner, ctx context.Context, c *command, args []string) error
}

// commands lists every subcommand in the order of the help text. It is a
// function, not a package variable, so that commands can print help
// without an initialization cycle.
func commands() []*command {
	return []*command{
		statsCommand, listCommand, showCommand, enqueueCommand, retryCommand, cancelCommand, dlqCommand,
		queuesCommand, pauseCommand, resumeCommand, workflowsCommand,
		recoverCommand, purgeCommand, periodicCommand, waitCommand, workerCommand, workersCommand, dashboardCommand,
		migrateCommand,
	}
}

func lookup(name string) *command {
	for _, c := range commands() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// didYouMean returns ` (did you mean "x"?)` for a command name within edit
// distance 2 of name, or "".
func didYouMean(name string) string {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	best := suggest.Closest(name, names)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// globalFlags names the flags every command accepts.
var globalFlags = []string{"data-dir", "shards", "dsn", "schema", "queue-max-compatible"}

// newFlagSet returns a flag set for command name ("" for the program)
// holding the global flags. Flags may be written -x or --x.
func (r *runner) newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.Func("data-dir", "the data directory `DIR`, which holds the shard files (env DATA_DIR; default ./data)", func(s string) error {
		if s == "" {
			return errors.New("empty path")
		}
		r.dataDir, r.dataDirSet = s, true
		return nil
	})
	fs.Func("shards", "`N` shards, 1–1024 (env NUM_SHARDS; default: as many as the data dir holds, 6 for a new one)", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1024 {
			return errors.New("want a number from 1 to 1024")
		}
		r.shards = n
		return nil
	})
	fs.Func("dsn", "a PostgreSQL `URL` (postgres://…) to use instead of a data dir (env QUEUE_MAX_DSN)", func(s string) error {
		if s == "" {
			return errors.New("empty DSN")
		}
		r.dsn = s
		return nil
	})
	fs.Func("schema", "the PostgreSQL `SCHEMA` holding the queue, with --dsn (env QUEUE_MAX_SCHEMA; default queuemax)", func(s string) error {
		if s == "" {
			return errors.New("empty schema")
		}
		r.schema = s
		return nil
	})
	// A function, not BoolVar, which would reset the global flag given
	// before the command when the command's flag set is made.
	fs.BoolFunc("queue-max-compatible", "the data directory is one queue-max 0.2.0 shares: a new one is created in its layout, a native one is refused (see the migrate command)", func(s string) error {
		v, err := strconv.ParseBool(s)
		r.queueMax = v
		return err
	})
	return fs
}

// parse parses args into fs. For a subcommand (c not nil) it prints c's
// help on --help and rejects positional arguments. Errors are usage errors
// that name the flag, or errHelp.
func (r *runner) parse(fs *flag.FlagSet, c *command, args []string) error {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if c != nil {
			printCommandUsage(r.stdout, r.name, c, fs)
		}
		return errHelp
	case err != nil:
		return &usageError{flagError(err, r.name, c)}
	case c != nil && fs.NArg() > 0:
		return usagef("unexpected argument %q (see %s %s --help)", fs.Arg(0), r.name, c.name)
	}
	return nil
}

// parseID parses args into fs as parse does, but takes one positional
// argument (the ID a command acts on) anywhere among the flags, and
// returns it ("" when none is given).
func (r *runner) parseID(fs *flag.FlagSet, c *command, args []string) (string, error) {
	var pos []string
	for rest := args; ; {
		err := fs.Parse(rest)
		switch {
		case errors.Is(err, flag.ErrHelp):
			printCommandUsage(r.stdout, r.name, c, fs)
			return "", errHelp
		case err != nil:
			return "", &usageError{flagError(err, r.name, c)}
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) > 1 {
		return "", usagef("unexpected argument %q (see %s %s --help)", pos[1], r.name, c.name)
	}
	if len(pos) == 0 {
		return "", nil
	}
	return pos[0], nil
}

// idArg returns the ID a command acts on: the positional one, or the value
// of the deprecated flag (with a notice on stderr saying how to write it
// now). Giving both is a usage error unless they agree.
func (r *runner) idArg(c *command, pos, flagName, flagVal string) (string, error) {
	if flagVal == "" {
		return pos, nil
	}
	if pos != "" && pos != flagVal {
		return "", usagef("the ID is given twice (%s and --%s %s): write it once, as an argument", pos, flagName, flagVal)
	}
	fmt.Fprintf(r.stderr, "%s %s: --%s is deprecated; write the ID as an argument: %s %s %s\n", r.name, c.name, flagName, r.name, c.name, flagVal)
	return flagVal, nil
}

// flagError rewrites the flag package's messages in the --flag spelling.
func flagError(err error, prog string, c *command) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
	} else {
		msg = strings.Replace(msg, "flag -", "flag --", 1)
		msg = strings.Replace(msg, "argument: -", "argument: --", 1)
	}
	help := prog + " --help"
	if c != nil {
		help = prog + " " + c.name + " --help"
	}
	return fmt.Errorf("%s (see %s)", msg, help)
}

// printCommandUsage writes c's help: usage line, description, flags.
func printCommandUsage(w io.Writer, prog string, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s %s %s\n\n", prog, c.name, c.args)
	fmt.Fprintln(w, strings.TrimSpace(c.help))
	fmt.Fprintln(w)
	var local, global []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if slices.Contains(globalFlags, f.Name) {
			global = append(global, f)
		} else {
			local = append(local, f)
		}
	})
	if len(local) > 0 {
		fmt.Fprintln(w, "Flags:")
		printFlags(w, local)
	}
	fmt.Fprintln(w, "Global flags:")
	printFlags(w, global)
	fmt.Fprintln(w, "\nExit status: 0 success, 1 failure, 2 usage error.")
}

func printFlags(w io.Writer, flags []*flag.Flag) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range flags {
		arg, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if arg != "" {
			name += " " + arg
		}
		if d := f.DefValue; d != "" && d != "0" && d != "false" && d != "-1" && d != "0s" {
			usage += fmt.Sprintf(" (default %s)", d)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	}
	tw.Flush()
}

// mainUsage writes the program's help.
func (r *runner) mainUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s [global flags] <command> [flags]\n\n", r.name)
	fmt.Fprintf(w, "%s operates a queuemax data directory", r.name)
	if len(r.handlers) > 0 {
		fmt.Fprintf(w, " and runs its %d tasks", len(r.handlers))
	}
	fmt.Fprintln(w, ".\n\nCommands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	fmt.Fprintf(tw, "  help\tshow the help of a command\n")
	tw.Flush()
	fmt.Fprintln(w, "\nGlobal flags (accepted before or after the command):")
	fs := r.newFlagSet("")
	var global []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { global = append(global, f) })
	printFlags(w, global)
	fmt.Fprintf(w, `
Environment: the runtime's variables (DATA_DIR, NUM_SHARDS, QUEUE_MAX_RETRIES,
RATE_LIMIT_MAX, DB_BUSY_TIMEOUT, HEARTBEAT_INTERVAL, STUCK_TIMEOUT, ...,
QUEUE_MAX_LOG_LEVEL); flags override them.

Exit status: 0 success, 1 failure, 2 usage error.
Run '%s <command> --help' for a command's flags.
`, r.name)
}

// listFlag collects a repeatable flag whose values may also be
// comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for v := range strings.SplitSeq(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// optInt is an int flag that remembers whether it was set.
type optInt struct {
	v   int
	set bool
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

func (o *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("not an integer")
	}
	o.v, o.set = n, true
	return nil
}

// optInt64 is an int64 flag that remembers whether it was set.
type optInt64 struct {
	v   int64
	set bool
}

func (o *optInt64) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatInt(o.v, 10)
}

func (o *optInt64) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	o.v, o.set = n, true
	return nil
}

// priorityFlag parses 0, 1, 2 or low, medium, high.
type priorityFlag struct {
	p   queuemax.Priority
	set bool
}

func (f *priorityFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return f.p.String()
}

func (f *priorityFlag) Set(s string) error {
	switch strings.ToLower(s) {
	case "0", "low":
		f.p = queuemax.PriorityLow
	case "1", "medium":
		f.p = queuemax.PriorityMedium
	case "2", "high":
		f.p = queuemax.PriorityHigh
	default:
		return errors.New("want 0, 1, 2 or low, medium, high")
	}
	f.set = true
	return nil
}

// timeFlag parses an RFC 3339 time.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return errors.New("want an RFC 3339 time such as 2026-12-01T09:00:00Z")
	}
	f.t = t
	return nil
}
