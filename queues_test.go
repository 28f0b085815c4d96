package queuemax

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestOpen_QueueConfigErrors(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, *Job) (any, error) { return nil, nil }
	tests := []struct {
		name      string
		cfg       Config
		wantField string
		wantMsg   string
	}{
		{"BadName", Config{Queues: map[string]QueueConfig{"E mails": {MaxWorkers: 1}}}, `Queues["E mails"]`, "invalid queue name"},
		{"Default", Config{Queues: map[string]QueueConfig{"default": {MaxWorkers: 1}}}, `Queues["default"]`, "default queue is not configured"},
		{"ZeroWorkers", Config{Queues: map[string]QueueConfig{"emails": {}}}, `Queues["emails"]`, "MaxWorkers 0: must be at least 1"},
		{"NegativeWorkers", Config{Queues: map[string]QueueConfig{"emails": {MaxWorkers: -2}}}, `Queues["emails"]`, "MaxWorkers -2"},
		{"SumTakesAll", Config{Workers: 4, Queues: map[string]QueueConfig{"a": {MaxWorkers: 2}, "b": {MaxWorkers: 2}}}, "Queues", "take 4 workers of Workers 4"},
		{"SumOverAutoscaleMin", Config{Workers: 10, Autoscale: &Autoscale{Min: 2, Max: 20}, Queues: map[string]QueueConfig{"a": {MaxWorkers: 2}}},
			"Queues", "take 2 workers of Autoscale.Min 2"},
		{"HandlerQueueNotListed", Config{Queues: map[string]QueueConfig{"emails": {MaxWorkers: 1}},
			Handlers: []Handler{{Name: "t.R", Options: TaskOptions{Queue: "reports"}, Func: noop}}}, "Queues", `task "t.R" is in queue "reports"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Dir = t.TempDir()
			_, err := Open(t.Context(), tt.cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.wantField || !strings.Contains(ce.Msg, tt.wantMsg) || !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Open error = %v, want *ConfigError for %s saying %q", err, tt.wantField, tt.wantMsg)
			}
		})
	}
	t.Run("BadHandlerQueue", func(t *testing.T) {
		t.Parallel()
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{{Name: "t.R", Options: TaskOptions{Queue: "-x"}, Func: noop}}})
		if !errors.Is(err, ErrInvalidQueue) || !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `handler "t.R"`) {
			t.Errorf("Open error = %v, want ErrInvalidConfig and ErrInvalidQueue naming the handler", err)
		}
	})
}

func TestClient_EnqueueQueue(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, *Job) (any, error) { return nil, nil }
	b := setup(t, Config{Workers: 4, Queues: map[string]QueueConfig{"emails": {MaxWorkers: 1}, "bulk": {MaxWorkers: 2}},
		Handlers: []Handler{
			{Name: "t.Mail", Options: TaskOptions{Queue: "emails"}, Func: noop},
			{Name: "t.Plain", Func: noop},
		}})
	ctx := b.ctx
	enqueue := func(task string, o Opts) string {
		t.Helper()
		id, err := b.c.Enqueue(ctx, task, struct{}{}, o)
		if err != nil {
			t.Fatalf("Enqueue(%s, %+v): %v", task, o, err)
		}
		j, err := b.c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Queue
	}
	for _, tt := range []struct {
		task string
		o    Opts
		want string
	}{
		{"t.Mail", Opts{}, "emails"},                   // the task's queue
		{"t.Mail", Opts{Queue: "bulk"}, "bulk"},        // Opts wins
		{"t.Plain", Opts{}, "default"},                 // neither
		{"t.Plain", Opts{Queue: "default"}, "default"}, // named explicitly
		{"t.Plain", Opts{Queue: "emails"}, "emails"},
	} {
		if got := enqueue(tt.task, tt.o); got != tt.want {
			t.Errorf("Enqueue(%s, %+v): queue %q, want %q", tt.task, tt.o, got, tt.want)
		}
	}
	if _, err := b.c.Enqueue(ctx, "t.Plain", struct{}{}, Opts{Queue: "Bad!"}); !errors.Is(err, ErrInvalidQueue) {
		t.Errorf("Enqueue(Queue: Bad!) error = %v, want ErrInvalidQueue", err)
	}
	if _, err := b.c.Enqueue(ctx, "t.Plain", struct{}{}, Opts{Queue: "reports"}); !errors.Is(err, ErrUnknownQueue) {
		t.Errorf("Enqueue(Queue: reports) error = %v, want ErrUnknownQueue", err)
	}
	// A pure producer stores any valid queue: another process works it.
	p := setup(t, Config{Dir: b.dir})
	if _, err := p.c.Enqueue(ctx, "t.Plain", struct{}{}, Opts{Queue: "reports"}); err != nil {
		t.Errorf("producer Enqueue(Queue: reports): %v", err)
	}
	qs, err := b.c.Queues(ctx)
	if err != nil {
		t.Fatalf("Queues: %v", err)
	}
	want := []QueueInfo{
		{Name: "bulk", Pending: 1, MaxWorkers: 2},
		{Name: "default", Pending: 2, MaxWorkers: 1},
		{Name: "emails", Pending: 2, MaxWorkers: 1},
		{Name: "reports", Pending: 1},
	}
	if diff := cmp.Diff(want, qs); diff != "" {
		t.Errorf("Queues mismatch (-want +got):\n%s", diff)
	}
}

// TestClient_PauseSeenByOtherProcess pauses a queue through one client and
// checks that a second client's Run (another "process" on the same store)
// leaves its jobs alone while other queues run, that both clients' Stats
// show the pause, and that Resume lets the job run.
func TestClient_PauseSeenByOtherProcess(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 10)
	h := Handler{Name: "t.Q", Func: func(_ context.Context, j *Job) (any, error) {
		ran <- j.Queue
		return nil, nil
	}}
	cancelBackends(t, []Handler{h}, func(t *testing.T, w, o *testBundle) {
		ctx := t.Context()
		pauses := collect(o.c, EventQueuePaused, EventQueueResumed)
		if err := o.c.Pause(ctx, "emails"); err != nil {
			t.Fatalf("Pause: %v", err)
		}
		if e := waitEvents(t, pauses, 1)[0]; e.Kind != EventQueuePaused || e.Queue != "emails" {
			t.Errorf("event %s %q, want queue_paused emails", e.Kind, e.Queue)
		}
		mail, err := o.c.Enqueue(ctx, "t.Q", struct{}{}, Opts{Queue: "emails"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.c.Enqueue(ctx, "t.Q", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		run(t, w.c)
		// The claim that took the default job ran after both enqueues:
		// it skipped the paused one.
		if q := <-ran; q != "default" {
			t.Fatalf("ran a job of queue %q first, want default", q)
		}
		if j, err := w.c.Job(ctx, mail); err != nil || j.Status != StatusPending {
			t.Fatalf("paused queue's job: %v, %v; want pending", j, err)
		}
		for _, c := range []*Client{w.c, o.c} {
			s, err := c.Stats(ctx)
			if err != nil {
				t.Fatalf("Stats: %v", err)
			}
			var got *QueueInfo
			for i := range s.Queues {
				if s.Queues[i].Name == "emails" {
					got = &s.Queues[i]
				}
			}
			if got == nil || !got.Paused || got.Pending != 1 || got.PausedAt.IsZero() {
				t.Errorf("Stats.Queues emails = %+v, want paused with 1 pending", got)
			}
		}
		if err := o.c.Resume(ctx, "emails"); err != nil {
			t.Fatalf("Resume: %v", err)
		}
		select {
		case q := <-ran:
			if q != "emails" {
				t.Errorf("after resume ran queue %q, want emails", q)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the resumed queue's job did not run")
		}
		if e := waitEvents(t, pauses, 1)[0]; e.Kind != EventQueueResumed || e.Queue != "emails" {
			t.Errorf("event %s %q, want queue_resumed emails", e.Kind, e.Queue)
		}
		qs, err := w.c.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]QueueInfo{{Name: "emails"}}, qs, cmpopts.IgnoreFields(QueueInfo{}, "Processing", "PausedAt")); diff != "" {
			t.Errorf("Queues after resume mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestClient_RunQueueFloodLeavesOtherWorkersFree floods a queue capped at
// 2 of 4 workers with blocked jobs and checks that the default queue's
// jobs still start at once on the other workers, and that the flood never
// runs more than 2 jobs at a time, on both stores.
func TestClient_RunQueueFloodLeavesOtherWorkersFree(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var (
				release     = make(chan struct{})
				bulkStarted = make(chan struct{}, 100)
				mailStarted = make(chan struct{}, 100)
				mu          sync.Mutex
				bulkNow     int
				bulkMax     int
			)
			bulk := Handler{Name: "t.Bulk", Options: TaskOptions{Queue: "bulk"}, Func: func(ctx context.Context, j *Job) (any, error) {
				mu.Lock()
				bulkNow++
				bulkMax = max(bulkMax, bulkNow)
				mu.Unlock()
				bulkStarted <- struct{}{}
				<-release
				mu.Lock()
				bulkNow--
				mu.Unlock()
				return nil, nil
			}}
			mail := Handler{Name: "t.Mail", Func: func(ctx context.Context, j *Job) (any, error) {
				mailStarted <- struct{}{}
				<-release
				return nil, nil
			}}
			cfg := Config{Workers: 4, Queues: map[string]QueueConfig{"bulk": {MaxWorkers: 2}}, Handlers: []Handler{bulk, mail}}
			if backend == "PostgreSQL" {
				cfg.Store = newPGTarget(t)
			} else {
				cfg.Shards = 2
			}
			b := setup(t, cfg)
			ctx := b.ctx
			const flood = 40
			ps := make([]EnqueueParams, flood)
			for i := range ps {
				ps[i] = EnqueueParams{Task: "t.Bulk", Payload: struct{}{}, Opts: Opts{Priority: Ptr(PriorityHigh)}}
			}
			if _, err := b.c.EnqueueMany(ctx, ps); err != nil {
				t.Fatal(err)
			}
			stop := run(t, b.c)
			wait := func(ch <-chan struct{}, what string) {
				t.Helper()
				select {
				case <-ch:
				case <-time.After(20 * time.Second):
					t.Fatalf("%s did not start", what)
				}
			}
			wait(bulkStarted, "the first bulk job")
			wait(bulkStarted, "the second bulk job")
			// Two default-queue jobs start on the two workers the flood
			// cannot take, while both bulk jobs still block.
			for range 2 {
				if _, err := b.c.Enqueue(ctx, "t.Mail", struct{}{}, Opts{}); err != nil {
					t.Fatal(err)
				}
			}
			wait(mailStarted, "the first default job")
			wait(mailStarted, "the second default job")
			qs, err := b.c.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			want := []QueueInfo{{Name: "bulk", Pending: flood - 2, Processing: 2, MaxWorkers: 2}, {Name: "default", Processing: 2, MaxWorkers: 2}}
			if diff := cmp.Diff(want, qs); diff != "" {
				t.Errorf("Queues during the flood mismatch (-want +got):\n%s", diff)
			}
			close(release)
			if err := b.c.WaitUntilEmpty(ctx); err != nil {
				t.Fatal(err)
			}
			stop()
			if bulkMax != 2 {
				t.Errorf("the flood ran %d jobs at once, want its MaxWorkers 2", bulkMax)
			}
			if n := len(bulkStarted); n != flood-2 {
				t.Errorf("%d more bulk jobs ran after the release, want %d", n, flood-2)
			}
		})
	}
}
