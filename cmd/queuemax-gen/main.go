// Queuemax-gen writes the typed task stubs of queuemax: for each package
// it finds functions annotated with //queuemax:task or //queuemax:periodic
// and writes queuemax_gen.go next to them, with a payload struct, a typed
// handle (Delay, ScheduleAt, ScheduleIn, Map, MapArgs, With, Call and,
// for tasks with a result, Result), the package's New and Handlers, and a
// compile-time guard per task.
//
// Add the generator to your module once (Go 1.26 or later, as the module
// needs), which pins its version in go.mod:
//
//	go get -tool github.com/queuemax/queuemax/cmd/queuemax-gen
//
// then put this line in any file of each annotated package, such as
// doc.go, and run go generate ./...:
//
//	//go:generate go tool queuemax-gen
//
// Usage:
//
//	queuemax-gen [flags] [packages]
//
// Packages are patterns as for go build; the default is ".", the package
// in the current directory, which is what go generate runs it in. The
// flags are:
//
//	-C dir
//		Change to dir before doing anything else. Error positions are
//		relative to it.
//	-tags list
//		A comma-separated list of build tags, as for go build.
//	-check
//		Write nothing; exit 1 and name each file that is missing or out
//		of date. CI can run it instead of go generate plus git diff.
//	-v
//		Name each file written.
//
// Files whose content would not change are not rewritten, so their
// modification times stay put. Output is deterministic and carries no
// version or date: running the generator twice changes nothing.
//
// Problems are printed to standard error one per line, like compiler
// errors, sorted by position:
//
//	email.go:14:17: queuemax:task: unknown key "priorty" (did you mean "priority"?)
//	email.go:22:6: queuemax:task SendEmail: first parameter must be context.Context, got string
//
// The exit status is 0 on success, 1 if there were problems (files of
// packages without problems are still written), and 2 for a usage error.
//
// The directive grammar is documented in package
// github.com/queuemax/queuemax/annotations.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/scanner"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	_ "time/tzdata" // cron="CRON_TZ=…" is checked the same on every machine

	"github.com/queuemax/queuemax/gen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK       = 0
	exitProblems = 1
	exitUsage    = 2
)

// run is main without the process: it parses args, generates, writes and
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("queuemax-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("C", "", "change to `dir` before running")
	tags := fs.String("tags", "", "comma-separated `list` of build tags")
	check := fs.Bool("check", false, "write nothing; exit 1 if a generated file is missing or out of date")
	verbose := fs.Bool("v", false, "name each file written")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: queuemax-gen [flags] [packages]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	cfg := gen.Config{Dir: *dir, Patterns: fs.Args()}
	if *tags != "" {
		cfg.BuildFlags = []string{"-tags=" + *tags}
	}
	files, err := gen.Generate(ctx, cfg)
	var list scanner.ErrorList
	if err != nil && !errors.As(err, &list) {
		fmt.Fprintf(stderr, "queuemax-gen: %v\n", err)
		return exitProblems
	}
	code := exitOK
	for _, e := range list {
		fmt.Fprintln(stderr, e)
		code = exitProblems
	}
	base := *dir
	if base == "" {
		base = "."
	}
	for _, f := range files {
		name := displayPath(base, f.Path)
		for _, note := range f.Notes {
			// Notes start with the function's base file name.
			fmt.Fprintln(stderr, displayPath(base, filepath.Join(filepath.Dir(f.Path), note)))
		}
		changed, err := differs(f)
		if err != nil {
			fmt.Fprintf(stderr, "queuemax-gen: %v\n", err)
			code = exitProblems
			continue
		}
		switch {
		case !changed:
		case *check:
			fmt.Fprintf(stderr, "%s: out of date; run go generate\n", name)
			code = exitProblems
		default:
			if err := write(f); err != nil {
				fmt.Fprintf(stderr, "queuemax-gen: %v\n", err)
				code = exitProblems
				continue
			}
			if *verbose {
				fmt.Fprintf(stdout, "wrote %s\n", name)
			}
		}
	}
	return code
}

// displayPath shows path relative to dir when it is inside it.
func displayPath(dir, path string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(abs, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return path
	}
	return rel
}

// differs reports whether f's content differs from the file on disk.
func differs(f gen.File) (bool, error) {
	old, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return !bytes.Equal(old, f.Content), nil
}

// write replaces f.Path atomically: a reader sees the old file or the new
// one, never half of it.
func write(f gen.File) error {
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), ".queuemax_gen-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(f.Content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.Path)
}
