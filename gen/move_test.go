package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// moveTasksSrc is a task package of the shop module.
const moveTasksSrc = `package tasks

import "context"

//go:generate go tool queuemax-gen

// SendEmail pretends to send one message.
//
//queuemax:task retries=0
func SendEmail(ctx context.Context, to string) error { return nil }
`

// moveMainSrc is the shop's program: "enqueue DIR" stores jobs through the
// generated handles (two now, one scheduled) plus one under the name an
// earlier queuemax derived from the import path; "work DIR" runs workers
// until four jobs completed and prints each one's task and recipient.
const moveMainSrc = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"time"

	"github.com/queuemax/queuemax"
	"IMPORT"
)

func main() {
	ctx := context.Background()
	dir := os.Args[2]
	quiet := slog.New(slog.DiscardHandler)
	c, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Shards: 2, Handlers: tasks.Handlers(), Logger: quiet})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	switch os.Args[1] {
	case "enqueue":
		t := tasks.New(c)
		must(t.SendEmail.Delay(ctx, "a@x"))
		must(t.SendEmail.Delay(ctx, "b@x"))
		must(t.SendEmail.ScheduleIn(ctx, time.Second, "c@x"))
		// A job an earlier version stored under its import-path name.
		old, err := queuemax.Open(ctx, queuemax.Config{Dir: dir, Logger: quiet})
		if err != nil {
			panic(err)
		}
		must(old.Enqueue(ctx, "example.com/shop/tasks.SendEmail", tasks.SendEmailArgs{To: "d@x"}, queuemax.Opts{AllowUnknownTask: true}))
		old.Close()
		fmt.Println("enqueued")
	case "work":
		done, stop := c.Subscribe(queuemax.EventCompleted)
		defer stop()
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		ran := make(chan error, 1)
		go func() { ran <- c.Run(ctx) }()
		var got []string
		for len(got) < 4 {
			select {
			case e := <-done:
				j, err := c.Job(ctx, e.JobID)
				if err != nil {
					panic(err)
				}
				var a tasks.SendEmailArgs
				if err := json.Unmarshal(j.Payload, &a); err != nil {
					panic(err)
				}
				got = append(got, e.Task+" "+a.To)
			case <-ctx.Done():
				fmt.Println("timeout after", got)
				os.Exit(1)
			}
		}
		cancel()
		<-ran
		sort.Strings(got)
		for _, g := range got {
			fmt.Println(g)
		}
	}
}

func must(_ queuemax.JobID, err error) {
	if err != nil {
		panic(err)
	}
}
`

// TestMovedPackageKeepsJobs moves a task package to another directory
// between two generator runs, with jobs queued (and one scheduled, and one
// stored under the import-path name of an earlier version): the
// regenerated program runs every one of them, under the same task name.
func TestMovedPackageKeepsJobs(t *testing.T) {
	if testing.Short() || *update {
		t.Skip("builds and runs a program twice")
	}
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	gomod := "module example.com/shop\n\ngo 1.26\n\n" +
		"require github.com/queuemax/queuemax v0.0.0-00010101000000-000000000000\n\n" +
		"replace github.com/queuemax/queuemax => " + root + "\n"
	writeFile(t, filepath.Join(work, "go.mod"), []byte(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(work, "go.sum"), sum)
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	data := filepath.Join(work, "data")

	// build generates the task package in pkgDir and builds the program
	// importing it.
	build := func(pkgDir, importPath string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(work, pkgDir), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(work, pkgDir, "tasks.go"), []byte(moveTasksSrc))
		writeFile(t, filepath.Join(work, "main.go"), []byte(strings.Replace(moveMainSrc, "IMPORT", importPath, 1)))
		res, err := generate(t.Context(), Config{Dir: filepath.Join(work, pkgDir), Env: env})
		if err != nil || len(res) != 1 || res[0].File == nil || len(res[0].Errs) > 0 {
			t.Fatalf("generate in %s: %v, %+v", pkgDir, err, res)
		}
		if !strings.Contains(string(res[0].File.Content), `"tasks.SendEmail"`) {
			t.Fatalf("generated code of %s does not name the task tasks.SendEmail", pkgDir)
		}
		writeFile(t, res[0].File.Path, res[0].File.Content)
		exe := filepath.Join(work, "shop-"+strings.ReplaceAll(pkgDir, "/", "-"))
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", exe, ".")
		cmd.Dir, cmd.Env = work, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build with the task package in %s: %v\n%s", pkgDir, err, out)
		}
		return exe
	}
	runProg := func(exe string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), exe, args...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", filepath.Base(exe), args, err, out)
		}
		return string(out)
	}

	before := build("tasks", "example.com/shop/tasks")
	if out := runProg(before, "enqueue", data); !strings.Contains(out, "enqueued") {
		t.Fatalf("enqueue: %s", out)
	}
	if err := os.RemoveAll(filepath.Join(work, "tasks")); err != nil {
		t.Fatal(err)
	}
	after := build("internal/jobs/tasks", "example.com/shop/internal/jobs/tasks")
	got := strings.Split(strings.TrimSpace(runProg(after, "work", data)), "\n")
	want := []string{"tasks.SendEmail a@x", "tasks.SendEmail b@x", "tasks.SendEmail c@x", "tasks.SendEmail d@x"}
	if !slices.Equal(got, want) {
		t.Errorf("jobs run after the move = %q, want %q", got, want)
	}
}
