package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestOpts_Timeout: a job's own timeout, set by a producer without
// handlers, is stored and applied by the worker process that runs it, in
// place of its task's (none here); a job without one keeps the task's.
func TestOpts_Timeout(t *testing.T) {
	t.Parallel()
	block := Define("t.Block", TaskOptions{MaxRetries: Ptr(0)}, func(ctx context.Context, _ struct{}) error {
		<-ctx.Done()
		return ctx.Err()
	})
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			cfg := Config{}
			if backend == "PostgreSQL" {
				cfg.Store = newPGTarget(t)
			}
			producer := setup(t, cfg) // a pure producer: no handlers
			cfg.Dir = producer.dir
			cfg.Handlers = []Handler{block}
			worker := setup(t, cfg)

			id, err := producer.c.Enqueue(producer.ctx, "t.Block", struct{}{}, Opts{Timeout: 50 * time.Millisecond, MaxRetries: Ptr(0)})
			if err != nil {
				t.Fatal(err)
			}
			if j, err := producer.c.Job(producer.ctx, id); err != nil || j.Timeout != 50*time.Millisecond {
				t.Fatalf("stored job = %+v, %v; want Timeout 50ms", j, err)
			}
			failed := collect(worker.c, EventFailed)
			defer run(t, worker.c)()
			e := waitEvents(t, failed, 1)[0]
			if e.JobID != id {
				t.Fatalf("failed event for %d, want %d", e.JobID, id)
			}
			j, err := worker.c.Job(worker.ctx, id)
			if err != nil || j.Status != StatusFailed || !strings.Contains(j.LastError, "exceeded 50ms timeout") {
				t.Errorf("job = %+v, %v; want failed with the 50ms timeout", j, err)
			}
		})
	}
	b := setup(t, Config{Handlers: []Handler{block}})
	if _, err := b.c.Enqueue(b.ctx, "t.Block", struct{}{}, Opts{Timeout: -time.Second}); !errors.Is(err, ErrInvalidTimeout) {
		t.Errorf("negative timeout: %v, want ErrInvalidTimeout", err)
	}
}

// TestOpts_MetadataAndTags: user metadata is stored as a JSON object that
// enqueue middleware adds to without losing its keys (and whose keys win
// on a clash); tags come from the task's defaults unless Opts replaces
// them, are listed and filtered on; bad tags are refused naming the tag,
// storing nothing.
func TestOpts_MetadataAndTags(t *testing.T) {
	t.Parallel()
	noop := Define("t.Noop", TaskOptions{Tags: []string{"default"}}, func(context.Context, struct{}) error { return nil })
	tracer := EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*InsertJob, next func(context.Context) ([]JobID, error)) ([]JobID, error) {
		for _, j := range jobs {
			if err := j.SetMetadata("otel", map[string]string{"traceparent": "00-abc-def-01"}); err != nil {
				return nil, err
			}
		}
		return next(ctx)
	})
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Handlers: []Handler{noop}, Middleware: []JobMiddleware{tracer}}
			if backend == "PostgreSQL" {
				cfg.Store = newPGTarget(t)
			}
			b := setup(t, cfg)
			task := NewTask[struct{}](b.c, noop.Name, noop.Options)
			tagged, err := task.With(Opts{Metadata: map[string]any{"tenant": "acme", "otel": "mine"}, Tags: []string{"vip", "eu"}}).Enqueue(b.ctx, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			def, err := task.Enqueue(b.ctx, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			none, err := task.With(Opts{Tags: []string{}}).Enqueue(b.ctx, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			j, err := b.c.Job(b.ctx, tagged)
			if err != nil {
				t.Fatal(err)
			}
			var meta map[string]any
			if err := json.Unmarshal(j.Metadata, &meta); err != nil {
				t.Fatalf("metadata %s: %v", j.Metadata, err)
			}
			want := map[string]any{"tenant": "acme", "otel": map[string]any{"traceparent": "00-abc-def-01"}}
			if diff := cmp.Diff(want, meta); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			tags := map[JobID][]string{}
			all, err := b.c.Jobs(b.ctx, ListParams{})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range all {
				tags[j.ID] = j.Tags
			}
			if diff := cmp.Diff(map[JobID][]string{tagged: {"vip", "eu"}, def: {"default"}, none: nil}, tags); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
			for tag, want := range map[string][]JobID{"vip": {tagged}, "eu": {tagged}, "default": {def}, "v": nil} {
				list, err := b.c.Jobs(b.ctx, ListParams{Tag: tag})
				if err != nil {
					t.Fatal(err)
				}
				var got []JobID
				for _, j := range list {
					got = append(got, j.ID)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Jobs(tag %q) (-want +got):\n%s", tag, diff)
				}
			}

			for _, tc := range []struct {
				tags []string
				msg  string
			}{
				{[]string{""}, "tag 0 is empty"},
				{[]string{"a b"}, `tag "a b" has a space`},
				{[]string{"a,b"}, `tag "a,b" has a space, comma`},
				{[]string{"x", "x"}, `tag "x" appears twice`},
				{[]string{strings.Repeat("t", MaxTagLength+1)}, "bytes (at most 64)"},
				{strings.Split(strings.Repeat("t,", MaxTags)+"last", ","), "21 tags (at most 20)"},
			} {
				_, err := task.With(Opts{Tags: tc.tags}).Enqueue(b.ctx, struct{}{})
				if !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("tags %q: %v, want ErrInvalidTag saying %q", tc.tags, err, tc.msg)
				}
			}
			if all, _ := b.c.Jobs(b.ctx, ListParams{}); len(all) != 3 {
				t.Errorf("%d jobs stored, want 3 (bad tags store nothing)", len(all))
			}
		})
	}
	_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{Define("t.BadTags", TaskOptions{Tags: []string{"a b"}},
		func(context.Context, struct{}) error { return nil })}})
	if !errors.Is(err, ErrInvalidTag) || !strings.Contains(err.Error(), `"t.BadTags"`) {
		t.Errorf("Open with bad task tags: %v, want ErrInvalidTag naming the handler", err)
	}
}
