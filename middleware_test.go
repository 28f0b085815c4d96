package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stampMiddleware writes {"by":name} into every job's metadata.
func stampMiddleware(name string) EnqueueMiddlewareFunc {
	return func(ctx context.Context, jobs []*InsertJob, next func(context.Context) ([]JobID, error)) ([]JobID, error) {
		for _, j := range jobs {
			if err := j.SetMetadata(name, true); err != nil {
				return nil, err
			}
		}
		return next(ctx)
	}
}

func TestMiddleware_Enqueue(t *testing.T) {
	t.Parallel()
	t.Run("WritesMetadataOnEveryPath", func(t *testing.T) {
		t.Parallel()
		var calls []int // jobs per InsertMany
		var mu sync.Mutex
		count := EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*InsertJob, next func(context.Context) ([]JobID, error)) ([]JobID, error) {
			mu.Lock()
			calls = append(calls, len(jobs))
			mu.Unlock()
			ids, err := next(ctx)
			if err == nil && len(ids) != len(jobs) {
				t.Errorf("next returned %d IDs for %d jobs", len(ids), len(jobs))
			}
			return ids, err
		})
		b := setup(t, Config{Shards: 2, Middleware: []JobMiddleware{stampMiddleware("a"), stampMiddleware("b"), count}})
		id, err := b.c.Enqueue(b.ctx, "t.One", map[string]int{"n": 1}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		ids, err := b.c.EnqueueMany(b.ctx, []EnqueueParams{{Task: "t.Many", Payload: map[string]int{}}, {Task: "t.Many", Payload: map[string]int{}}})
		if err != nil {
			t.Fatal(err)
		}
		typed := NewTask[struct{}](b.c, "t.Typed", TaskOptions{})
		tid, err := typed.Enqueue(b.ctx, struct{}{})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range append([]JobID{id, tid}, ids...) {
			j, err := b.c.Job(b.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(j.Metadata); got != `{"a":true,"b":true}` {
				t.Errorf("job %d metadata = %s, want {\"a\":true,\"b\":true}", id, got)
			}
		}
		if diff := cmp.Diff([]int{1, 2, 1}, calls); diff != "" {
			t.Errorf("InsertMany batch sizes (-want +got):\n%s", diff)
		}
	})
	t.Run("PeriodicJobs", func(t *testing.T) {
		t.Parallel()
		t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
		b := setup(t, Config{Shards: 2, Middleware: []JobMiddleware{stampMiddleware("periodic")},
			Handlers: []Handler{periodicHandler("t.Every", Periodic{Every: time.Minute})}})
		s := newTestScheduler(t, b.c)
		if err := s.Register(b.ctx, t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Tick(b.ctx, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		jobs, err := b.c.Jobs(b.ctx, ListParams{Task: "t.Every"})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Jobs = %d, %v; want 1 periodic job", len(jobs), err)
		}
		if got := string(jobs[0].Metadata); got != `{"periodic":true}` {
			t.Errorf("periodic job metadata = %s, want {\"periodic\":true}", got)
		}
	})
	t.Run("ChangesAreValidated", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name    string
			change  func(*InsertJob)
			wantErr error
		}{
			{"MetadataNotObject", func(j *InsertJob) { j.Metadata = json.RawMessage(`[1]`) }, ErrInvalidPayload},
			{"PayloadNotObject", func(j *InsertJob) { j.Payload = json.RawMessage(`"x"`) }, ErrInvalidPayload},
			{"Priority", func(j *InsertJob) { j.Priority = 7 }, ErrInvalidPriority},
			{"MaxAttempts", func(j *InsertJob) { j.MaxAttempts = 0 }, ErrInvalidRetries},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				mw := EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*InsertJob, next func(context.Context) ([]JobID, error)) ([]JobID, error) {
					tt.change(jobs[len(jobs)-1])
					return next(ctx)
				})
				b := setup(t, Config{Shards: 1, Middleware: []JobMiddleware{mw}})
				if _, err := b.c.Enqueue(b.ctx, "t.X", map[string]int{}, Opts{}); !errors.Is(err, tt.wantErr) {
					t.Errorf("Enqueue error = %v, want %v", err, tt.wantErr)
				}
				_, err := b.c.EnqueueMany(b.ctx, []EnqueueParams{{Task: "t.X", Payload: map[string]int{}}, {Task: "t.X", Payload: map[string]int{}}})
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("EnqueueMany error = %v, want %v", err, tt.wantErr)
				}
				if s, _ := b.c.Stats(b.ctx); s.Pending != 0 {
					t.Errorf("pending = %d after rejected enqueues, want 0", s.Pending)
				}
			})
		}
	})
	t.Run("ErrorInsertsNothing", func(t *testing.T) {
		t.Parallel()
		deny := errors.New("not allowed")
		mw := EnqueueMiddlewareFunc(func(context.Context, []*InsertJob, func(context.Context) ([]JobID, error)) ([]JobID, error) {
			return nil, deny
		})
		b := setup(t, Config{Shards: 1, Middleware: []JobMiddleware{mw}})
		if _, err := b.c.Enqueue(b.ctx, "t.X", map[string]int{}, Opts{}); !errors.Is(err, deny) {
			t.Errorf("Enqueue error = %v, want %v", err, deny)
		}
		if s, _ := b.c.Stats(b.ctx); s.Pending != 0 {
			t.Errorf("pending = %d, want 0", s.Pending)
		}
	})
	t.Run("KeyChangeMovesShard", func(t *testing.T) {
		t.Parallel()
		mw := EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*InsertJob, next func(context.Context) ([]JobID, error)) ([]JobID, error) {
			for _, j := range jobs {
				j.Key = Ptr(int64(5))
			}
			return next(ctx)
		})
		b := setup(t, Config{Shards: 4, Middleware: []JobMiddleware{mw}})
		for range 4 {
			id, err := b.c.Enqueue(b.ctx, "t.X", map[string]int{}, Opts{Key: Ptr(int64(2))})
			if err != nil {
				t.Fatal(err)
			}
			if id.Shard() != 1 {
				t.Errorf("job on shard %d, want 1 (key 5 mod 4)", id.Shard())
			}
		}
	})
}

func TestMiddleware_Work(t *testing.T) {
	t.Parallel()
	t.Run("OrderAndOutcome", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var trace []string
		log := func(s string) { mu.Lock(); trace = append(trace, s); mu.Unlock() }
		wrap := func(name string) WorkMiddlewareFunc {
			return func(ctx context.Context, job *Job, next func(context.Context) (any, error)) (any, error) {
				log(name + " before " + job.Task)
				res, err := next(ctx)
				log(fmt.Sprintf("%s after %v %v", name, res, err))
				return res, err
			}
		}
		h := DefineResult("t.W", TaskOptions{}, func(context.Context, struct{}) (int, error) { log("handler"); return 7, nil })
		b := setup(t, Config{Shards: 1, Handlers: []Handler{h}, Middleware: []JobMiddleware{wrap("outer"), wrap("inner")},
			Hooks: Hooks{OnStart: func(context.Context, *Job) { log("on_start") }}})
		done := onEvents(b.c, EventCompleted)
		if _, err := b.c.Enqueue(b.ctx, "t.W", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		stop := run(t, b.c)
		<-done
		stop()
		want := []string{"on_start", "outer before t.W", "inner before t.W", "handler", "inner after 7 <nil>", "outer after 7 <nil>"}
		if diff := cmp.Diff(want, trace); diff != "" {
			t.Errorf("call order (-want +got):\n%s", diff)
		}
	})
	t.Run("ErrorAndPanicFailTheJob", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("denied by middleware")
		mw := WorkMiddlewareFunc(func(ctx context.Context, job *Job, next func(context.Context) (any, error)) (any, error) {
			switch job.Task {
			case "t.Deny":
				return nil, Permanent(boom)
			case "t.Panic":
				panic("middleware exploded")
			}
			return next(ctx)
		})
		ran := make(chan string, 2)
		hs := []Handler{
			Define("t.Deny", TaskOptions{}, func(context.Context, struct{}) error { ran <- "t.Deny"; return nil }),
			Define("t.Panic", TaskOptions{}, func(context.Context, struct{}) error { ran <- "t.Panic"; return nil }),
		}
		b := setup(t, Config{Shards: 1, Handlers: hs, MaxRetries: Ptr(0), Middleware: []JobMiddleware{mw}})
		failed := onEvents(b.c, EventFailed)
		for _, task := range []string{"t.Deny", "t.Panic"} {
			if _, err := b.c.Enqueue(b.ctx, task, struct{}{}, Opts{}); err != nil {
				t.Fatal(err)
			}
		}
		stop := run(t, b.c)
		var got []string
		for range 2 {
			ev := <-failed
			got = append(got, ev.Task+": "+ev.Error)
		}
		stop()
		slices.Sort(got)
		if len(got) != 2 || got[0] != "t.Deny: denied by middleware" || !strings.HasPrefix(got[1], "t.Panic: ") || !strings.Contains(got[1], "middleware exploded") {
			t.Errorf("failures = %q, want the middleware's error and panic", got)
		}
		select {
		case task := <-ran:
			t.Errorf("handler %s ran, want it skipped by the middleware", task)
		default:
		}
	})
}

func TestOpen_MiddlewareMustImplementOne(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), Config{Dir: t.TempDir(), Shards: 1, Middleware: []JobMiddleware{struct{}{}}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Middleware" {
		t.Fatalf("Open error = %v, want a *ConfigError for Middleware", err)
	}
}
