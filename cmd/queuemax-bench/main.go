// Queuemax-bench measures queuemax against queue-max's published performance
// table and against the floor: the minimal SQL work per job done directly
// on modernc.org/sqlite with the same pragmas and shard counts, in the same
// run, so every figure is also printed as a ratio to what SQLite itself can
// do on this machine. The minimal floor is one table (id INTEGER PRIMARY
// KEY, status, lease_until, payload) with no secondary index: inserts one
// row per transaction and 1,000 per transaction, claims of 100 rows by one
// UPDATE … RETURNING and deletes of 100 by id, one goroutine per file.
// Every ratio is against it. The schema floor, the same SQL on queuemax's
// own tables and indexes, is printed beside it as what the schema costs.
// Every floor row also gives the process CPU per row.
//
// Usage:
//
//	queuemax-bench [flags]
//
// make bench runs it with its defaults. The flags are:
//
//	-scale f
//		Multiply every job count by f (default 1). -scale 0.1 is a quick
//		check; counts never drop below a small minimum.
//	-store sqlite|postgres
//		The store to measure (default sqlite). make bench-pg runs
//		-store postgres.
//	-dsn url
//		The PostgreSQL server for -store postgres (default $QUEUE_MAX_DSN,
//		else postgres://postgres@127.0.0.1:5432/test?sslmode=disable).
//		Every scenario uses fresh schemas and drops them afterwards.
//	-scenarios list
//		Comma-separated scenarios to run, in this order (default all).
//		SQLite: floor, processing, burst, contention, failure, scale,
//		depth, latency, enqueue, procs, idle, limits, workflow, steps.
//		PostgreSQL: floor, processing, enqueue, failure, depth, latency,
//		procs, idle, limits, workflow, steps. The floors the
//		chosen scenarios compare against are always measured.
//	-json path
//		Write the results as JSON to path (default bench-results.json;
//		empty: none).
//	-dir path
//		Parent of the per-scenario temporary data directories (default
//		the system temporary directory). Each scenario gets a fresh one,
//		removed afterwards.
//	-layout native|queue-max
//		The SQLite layout of the data directories the scenarios create
//		(default: a new directory's, native). The schema floor follows
//		it.
//	-cpuprofile path
//		Write a CPU profile of the whole run.
//	-markdown
//		Print the table in Markdown (as docs/performance.md shows it).
//	-v
//		Log queuemax at Info level to standard error.
//
// Every scenario runs no-op handlers unless said otherwise and maps its
// "workers" to Config.Workers of one Client's Run (one process, one
// engine, as an application would deploy it). Every run verifies
// exactly-once completion: the IDs seen by the handlers are collected, and
// any duplicate execution, lost job or leftover row makes the program exit
// with status 1 after printing the table. A missed performance target is
// reported in the table but does not change the exit status.
//
// With -store postgres every scenario is compared with a PostgreSQL floor
// measured on the same server right before it: INSERT one row per call,
// INSERT … unnest of 1,000 rows, and claims of 100 rows with UPDATE …
// FOR UPDATE SKIP LOCKED followed by DELETE … WHERE id = ANY. Each figure
// also gets CPU time per job of this process (getrusage) and of the
// server (utime+stime from /proc/<pid>/stat of the backends serving the
// run's connections, found by application_name, plus the WAL writer,
// checkpointer, background writer and autovacuum workers), when the
// server runs on this machine.
//
// The cross-process latency scenario re-executes this binary as the
// producer (the hidden -producer flag).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/queuemax/queuemax"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // a verification failed or a scenario could not run
	exitUsage  = 2
)

// scenarioNames lists every scenario in the order they run.
var scenarioNames = []string{"floor", "processing", "burst", "contention", "failure", "scale", "depth", "latency", "enqueue", "procs", "idle", "limits", "workflow", "steps"}

// defaultDSN is QUEUE_MAX_DSN, else the local test server.
func defaultDSN() string {
	if dsn := os.Getenv("QUEUE_MAX_DSN"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("queuemax-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o          options
		scenarios  string
		jsonPath   string
		cpuprofile string
		producer   producerFlags
	)
	fs.Float64Var(&o.scale, "scale", 1, "multiply every job count by `f`")
	fs.StringVar(&scenarios, "scenarios", "", "comma-separated `list` of scenarios (default all of the store's)")
	fs.StringVar(&o.store, "store", "sqlite", "the `store` to measure: sqlite or postgres")
	fs.StringVar(&o.dsn, "dsn", defaultDSN(), "the PostgreSQL server (a postgres:// `URL`) for -store postgres")
	fs.StringVar(&jsonPath, "json", "bench-results.json", "write results as JSON to `path` (empty: none)")
	fs.StringVar(&o.dir, "dir", "", "parent `directory` of the temporary data directories")
	fs.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile to `path`")
	fs.BoolVar(&o.verbose, "v", false, "log queuemax at Info level to stderr")
	retention := fs.String("completed-retention", "", "Config.CompletedRetention of the clients measured: a `duration`, 0 for off (default: queuemax's default)")
	markdown := fs.Bool("markdown", false, "print the table in Markdown")
	layout := fs.String("layout", "", "the SQLite `layout` of the data directories: native (a new directory's default) or queue-max")
	producer.register(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "queuemax-bench: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if producer.enabled {
		if err := runProducer(ctx, producer); err != nil {
			fmt.Fprintf(stderr, "queuemax-bench: producer: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	switch l := queuemax.SQLiteLayout(*layout); l {
	case "", queuemax.LayoutNative, queuemax.LayoutQueueMax:
		o.layout = l
	default:
		fmt.Fprintf(stderr, "queuemax-bench: -layout %q: want native or queue-max\n", *layout)
		return exitUsage
	}
	if *retention != "" {
		d, err := time.ParseDuration(*retention)
		if err != nil || d < 0 {
			fmt.Fprintf(stderr, "queuemax-bench: -completed-retention %q: want a duration or 0\n", *retention)
			return exitUsage
		}
		o.retention = d
		if d == 0 {
			o.retention = queuemax.RetentionOff
		}
	}
	if o.scale <= 0 {
		fmt.Fprintln(stderr, "queuemax-bench: -scale must be positive")
		return exitUsage
	}
	valid := scenarioNames
	switch o.store {
	case "sqlite":
	case "postgres":
		valid = pgScenarioNames
	default:
		fmt.Fprintf(stderr, "queuemax-bench: unknown -store %q (valid: sqlite, postgres)\n", o.store)
		return exitUsage
	}
	if scenarios == "" {
		scenarios = strings.Join(valid, ",")
	}
	var chosen []string
	for s := range strings.SplitSeq(scenarios, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(valid, s) {
			fmt.Fprintf(stderr, "queuemax-bench: unknown %s scenario %q (valid: %s)\n", o.store, s, strings.Join(valid, ", "))
			return exitUsage
		}
		chosen = append(chosen, s)
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "queuemax-bench: %v\n", err)
			return exitFailed
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "queuemax-bench: %v\n", err)
			return exitFailed
		}
		defer pprof.StopCPUProfile()
	}
	o.stderr = stderr
	b := newBench(o)
	rep := b.run(ctx, chosen)
	if *markdown {
		rep.printMarkdown(stdout)
	} else {
		rep.print(stdout)
	}
	if jsonPath != "" {
		if err := rep.writeJSON(jsonPath); err != nil {
			fmt.Fprintf(stderr, "queuemax-bench: %v\n", err)
			return exitFailed
		}
	}
	if len(rep.Failures) > 0 {
		fmt.Fprintln(stderr)
		for _, f := range rep.Failures {
			fmt.Fprintf(stderr, "FAIL: %s\n", f)
		}
		fmt.Fprintf(stderr, "queuemax-bench: %d verification failure(s)\n", len(rep.Failures))
		return exitFailed
	}
	return exitOK
}
