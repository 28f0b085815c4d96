package queuemax

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

type sendArgs struct {
	To string `json:"to"`
}

// testEarlierNames: jobs stored under a task's earlier names (the
// import-path name an earlier version derived, a declared alias), pending
// and scheduled, run under the task's name on a worker that never heard
// of the old name's package.
func testEarlierNames(t *testing.T, base func() Config) {
	ran := make(chan string, 10)
	h := Define("tasks.Send", TaskOptions{Aliases: []string{"shop.Mail"}}, func(_ context.Context, a sendArgs) error {
		ran <- a.To
		return nil
	})
	cfg := base()
	cfg.AllowUnknownTasks = true // an earlier version's producer stored these names
	old := setup(t, cfg)
	for _, e := range []struct {
		task string
		to   string
		at   time.Time
	}{
		{"example.com/shop/tasks.Send", "pending@x", time.Time{}},
		{"example.com/shop/tasks.Send", "scheduled@x", time.Now().Add(500 * time.Millisecond)},
		{"shop.Mail", "alias@x", time.Time{}},
	} {
		if _, err := old.c.Enqueue(old.ctx, e.task, sendArgs{To: e.to}, Opts{RunAt: e.at}); err != nil {
			t.Fatal(err)
		}
	}
	cfg = base()
	cfg.Handlers = []Handler{h}
	w := setup(t, cfg)
	run(t, w.c)
	got := map[string]bool{}
	timeout := time.After(60 * time.Second)
	for len(got) < 3 {
		select {
		case to := <-ran:
			got[to] = true
		case <-timeout:
			t.Fatalf("ran %v, want the pending, scheduled and alias jobs", got)
		}
	}
	// An enqueue under an earlier name stores the task's name.
	id, err := w.c.Enqueue(w.ctx, "shop.Mail", sendArgs{To: "again@x"}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := w.c.Job(w.ctx, id); err != nil || j.Task != "tasks.Send" {
		t.Errorf("job enqueued under the alias = %+v, %v; want task tasks.Send", j, err)
	}
}

func TestEarlierNames_SQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testEarlierNames(t, func() Config { return Config{Dir: dir, Shards: 2} })
}

// testCatalogResolution: a client without the task's handler resolves
// names against the store's task catalogue, which a worker's Run wrote and
// which stays after the worker stopped: short names and aliases resolve,
// an unknown or ambiguous name is refused with the near matches, and
// Opts.AllowUnknownTask stores a name as given.
func testCatalogResolution(t *testing.T, base func() Config) {
	pcfg := base()
	pcfg.strictNames = true
	producer := setup(t, pcfg)
	// Nothing published yet: a short name is not stored as given.
	_, err := producer.c.Enqueue(producer.ctx, "Send", sendArgs{To: "x"}, Opts{})
	if !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("Enqueue(Send) with an empty catalogue = %v, want ErrUnknownTask", err)
	}
	noop := func(context.Context, sendArgs) error { return nil }
	cfg := base()
	cfg.Handlers = []Handler{
		Define("tasks.Send", TaskOptions{Aliases: []string{"shop.Mail"}, Queue: "mail"}, noop),
		Define("billing.Send", TaskOptions{}, noop),
		Define("tasks.Report", TaskOptions{}, noop),
	}
	w := setup(t, cfg)
	stop := run(t, w.c)
	waitFor(t, "the worker's catalogue", func() bool {
		cat, err := producer.c.TaskCatalog(producer.ctx)
		return err == nil && len(cat) == 3
	})
	stop() // the catalogue outlives the worker
	cat, err := producer.c.TaskCatalog(producer.ctx)
	if err != nil || len(cat) != 3 || cat[2].Name != "tasks.Send" || cat[2].Queue != "mail" || len(cat[2].Aliases) != 1 ||
		!strings.Contains(string(cat[2].Schema), `"to"`) {
		t.Fatalf("TaskCatalog = %+v, %v; want billing.Send, tasks.Report, tasks.Send with its alias, queue and schema", cat, err)
	}
	for name, want := range map[string]string{"Report": "tasks.Report", "tasks.Report": "tasks.Report", "shop.Mail": "tasks.Send",
		"example.com/shop/tasks.Report": "tasks.Report"} {
		id, err := producer.c.Enqueue(producer.ctx, name, sendArgs{To: "x"}, Opts{})
		if err != nil {
			t.Errorf("Enqueue(%s): %v", name, err)
			continue
		}
		if j, err := producer.c.Job(producer.ctx, id); err != nil || j.Task != want {
			t.Errorf("Enqueue(%s) stored %+v, %v; want task %s", name, j, err, want)
		}
	}
	_, err = producer.c.Enqueue(producer.ctx, "Send", sendArgs{To: "x"}, Opts{})
	if !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), "billing.Send, tasks.Send") {
		t.Errorf("Enqueue(Send) = %v, want ambiguous between billing.Send and tasks.Send", err)
	}
	_, err = producer.c.Enqueue(producer.ctx, "tasks.Reprot", sendArgs{To: "x"}, Opts{})
	if !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), `did you mean "tasks.Report"`) {
		t.Errorf("Enqueue(tasks.Reprot) = %v, want unknown with a suggestion", err)
	}
	if full, err := producer.c.ResolveTaskName(producer.ctx, "Report"); err != nil || full != "tasks.Report" {
		t.Errorf("ResolveTaskName(Report) = %q, %v", full, err)
	}
	id, err := producer.c.Enqueue(producer.ctx, "later.Task", sendArgs{To: "x"}, Opts{AllowUnknownTask: true})
	if err != nil {
		t.Fatalf("Enqueue with AllowUnknownTask: %v", err)
	}
	if j, err := producer.c.Job(producer.ctx, id); err != nil || j.Task != "later.Task" {
		t.Errorf("AllowUnknownTask stored %+v, %v; want later.Task as given", j, err)
	}
}

func TestCatalogResolution_SQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testCatalogResolution(t, func() Config { return Config{Dir: dir, Shards: 2} })
}
