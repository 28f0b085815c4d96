package engine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/ratelimit"
	"github.com/queuemax/queuemax/runtime/scale"
	"github.com/queuemax/queuemax/runtime/store"
)

// TestRun_LeaseLostCompletionRejected: a job another worker took over
// while it ran (as after a stuck timeout and a new claim) is not
// acknowledged by the engine that lost it: it counts as lease lost, not
// processed, and the new owner's completion stands.
func TestRun_LeaseLostCompletionRejected(t *testing.T) {
	t.Parallel()
	var l *live
	taken := make(chan *store.Job, 1)
	h := handle(func(ctx context.Context, j *store.Job) (any, error) {
		// With one worker busy on this job the engine claims nothing
		// meanwhile: the other worker's claim takes it.
		now := time.Now().UTC()
		if _, err := l.st.RecoverOrphans(ctx, now.Add(time.Hour), now); err != nil {
			t.Error(err)
		}
		js, err := l.st.Claim(ctx, store.ClaimParams{WorkerID: "other", Max: 1, Now: now})
		if err != nil || len(js) != 1 || js[0].ID != j.ID {
			t.Errorf("takeover claim = %+v, %v; want job %d", js, err, j.ID)
			taken <- nil
		} else {
			taken <- js[0]
		}
		return "stale", nil
	})
	l = newLive(t, map[string]*Handler{"t.Lost": h})
	l.cfg.Workers, l.cfg.ClaimBatch = 1, 1
	l.exec.KeepCompleted = true
	l.start()
	id := l.enqueue("t.Lost", `{}`, 3) // attempts left after the recovery
	other := <-taken
	if other == nil {
		t.FailNow()
	}
	l.stop()
	if s := l.e.Stats(); s.LeaseLost != 1 || s.Processed != 0 {
		t.Errorf("engine stats lease lost %d, processed %d; want 1 and 0", s.LeaseLost, s.Processed)
	}
	if j := l.job(id); j.Status != store.StatusProcessing || j.WorkerID != "other" {
		t.Fatalf("job after the stale acknowledgement = %s by %q; want processing by the new owner", j.Status, j.WorkerID)
	}
	errs := l.st.Complete(t.Context(), []store.CompleteParams{{Lease: Lease(other), Result: json.RawMessage(`"fresh"`), Now: time.Now().UTC()}})
	if errs[0] != nil {
		t.Fatalf("Complete by the owner: %v", errs[0])
	}
	if j := l.job(id); j.Status != store.StatusCompleted || string(j.Result) != `"fresh"` {
		t.Errorf("job = %s, result %s; want completed with the owner's result", j.Status, j.Result)
	}
}

// TestRun_Autoscales: under a backlog of blocked jobs the engine scales up
// to Autoscale.Max workers, all running; once drained it scales back to
// Min.
func TestRun_Autoscales(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	h := handle(func(ctx context.Context, _ *store.Job) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, nil
	})
	l := newLiveIn(t, t.TempDir(), 2, map[string]*Handler{"t.Block": h})
	p := scale.Policy{Min: 1, Max: 6, UpThreshold: 50, DownThreshold: 5, CheckInterval: 10 * time.Millisecond, Cooldown: time.Nanosecond}.WithDefaults()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	l.cfg.Workers, l.cfg.ClaimBatch, l.cfg.Autoscale = 1, 4, &p
	const n = 400
	payloads := make([]any, n)
	for i := range payloads {
		payloads[i] = nArgs{i}
	}
	l.insertQ("t.Block", "", payloads...)
	l.start()
	waitFor(t, "scale up to Max under a backlog", func() bool { s := l.e.Stats(); return s.Concurrency == 6 && s.Running == 6 })
	close(release)
	l.wait(n, queuemaxtype.EventCompleted)
	waitFor(t, "scale down to Min once drained", func() bool { return l.e.Stats().Concurrency == 1 })
}

// TestRun_PerTaskBreakers: each task has its own breaker: t.A's failures
// open t.A's while t.B keeps running; after the timeout a later t.A job
// is let through, and its success closes the breaker.
func TestRun_PerTaskBreakers(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	a := handle(func(context.Context, *store.Job) (any, error) {
		if healthy.Load() {
			return nil, nil
		}
		return nil, httpErr{503}
	})
	b := handle(func(context.Context, *store.Job) (any, error) { return nil, nil })
	l := newLive(t, map[string]*Handler{"t.A": a, "t.B": b})
	pol := breaker.Policy{Threshold: 2, Timeout: 50 * time.Millisecond}
	l.cfg.Breakers = map[string]breaker.Policy{"t.A": pol, "t.B": pol}
	l.cfg.Events = l.ev
	l.cfg.Workers, l.cfg.ClaimBatch = 1, 1
	l.start()
	l.enqueue("t.A", `{}`, 1)
	l.enqueue("t.A", `{}`, 1)
	l.wait(2, queuemaxtype.EventFailed)
	// t.A is open, or already half-open if the machine is slow; either
	// way it is not closed, and t.B is.
	if cs, worst, _ := l.e.CircuitSummary(); cs["t.A"] == "closed" || cs["t.B"] != "closed" || worst == "closed" {
		t.Fatalf("circuits = %v (worst %s); want t.A tripped and t.B closed", cs, worst)
	}
	// t.B keeps running while t.A's breaker is open.
	l.enqueue("t.B", `{}`, 1)
	if e := l.wait(1, queuemaxtype.EventCompleted)[0]; e.Task != "t.B" {
		t.Fatalf("completed %s, want t.B", e.Task)
	}
	// After the timeout t.A's probe finds no job and is released; a later
	// t.A job is still let through, and its success closes the breaker.
	healthy.Store(true)
	l.enqueue("t.A", `{}`, 1)
	if e := l.wait(1, queuemaxtype.EventCompleted)[0]; e.Task != "t.A" {
		t.Fatalf("completed %s, want t.A", e.Task)
	}
	if cs, _, _ := l.e.CircuitSummary(); cs["t.A"] != "closed" {
		t.Errorf("t.A circuit = %s after a successful probe, want closed", cs["t.A"])
	}
}

// TestRun_RateLimitedTaskDoesNotBlockOthers: a task at its rate limit
// holds no worker: the other task's jobs all run, and the limited task's
// waiting jobs stay pending.
func TestRun_RateLimitedTaskDoesNotBlockOthers(t *testing.T) {
	t.Parallel()
	ok := handle(func(context.Context, *store.Job) (any, error) { return nil, nil })
	l := newLive(t, map[string]*Handler{"t.Slow": ok, "t.Fast": ok})
	lim, err := ratelimit.New(1, time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.cfg.TaskLimiters = map[string]*ratelimit.Limiter{"t.Slow": lim}
	l.cfg.Workers, l.cfg.ClaimBatch = 2, 8
	for range 5 {
		l.enqueue("t.Slow", `{}`, 1)
	}
	for range 20 {
		l.enqueue("t.Fast", `{}`, 1)
	}
	l.start()
	count := map[string]int{}
	for _, e := range l.wait(21, queuemaxtype.EventCompleted) {
		count[e.Task]++
	}
	if count["t.Slow"] != 1 || count["t.Fast"] != 20 {
		t.Errorf("completed %v, want 1 t.Slow (one token per hour) and all 20 t.Fast", count)
	}
	for _, st := range []store.Status{store.StatusPending, store.StatusProcessing} {
		js, err := l.st.Jobs(t.Context(), store.ListParams{Shard: store.AllShards, Status: st, Task: "t.Slow"})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[store.Status]int{store.StatusPending: 4}[st]; len(js) != want {
			t.Errorf("%d jobs of t.Slow %s; want %d (none holding a worker)", len(js), st, want)
		}
	}
}

// TestRun_ShutdownAbandonsHandlerIgnoringCancellation: Run returns within
// DrainTimeout + ShutdownGrace although a handler ignores cancellation;
// the abandoned job is not lost: its lease lapses and another engine runs
// it.
func TestRun_ShutdownAbandonsHandlerIgnoringCancellation(t *testing.T) {
	t.Parallel()
	// Slack for a loaded machine: releasing jobs and stopping services.
	const slack = 10 * time.Second
	const drain, grace = 100 * time.Millisecond, 200 * time.Millisecond
	started, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { close(unblock) })
	stubborn := handle(func(context.Context, *store.Job) (any, error) {
		once.Do(func() { close(started) })
		<-unblock
		return nil, nil
	})
	dir := t.TempDir()
	l := newLiveIn(t, dir, 1, map[string]*Handler{"t.Stubborn": stubborn})
	l.cfg.DrainTimeout, l.cfg.ShutdownGrace = drain, grace
	l.cfg.HeartbeatInterval, l.cfg.StuckTimeout = 50*time.Millisecond, 300*time.Millisecond
	l.start()
	id := l.enqueue("t.Stubborn", `{}`, 3) // attempts left after the recovery
	<-started
	begin := time.Now()
	stopped := make(chan struct{})
	go func() { l.stop(); close(stopped) }()
	select {
	case <-stopped:
		if d := time.Since(begin); d < drain {
			t.Errorf("Run returned after %v, before the drain timeout", d)
		}
	case <-time.After(drain + grace + slack):
		t.Fatal("Run did not return: a handler ignoring cancellation blocks shutdown")
	}

	// The abandoned job is not lost: its lease lapses and another engine
	// runs it.
	var ran atomic.Int64
	w := newLiveIn(t, dir, 1, map[string]*Handler{"t.Stubborn": handle(func(context.Context, *store.Job) (any, error) {
		ran.Add(1)
		return nil, nil
	})})
	w.cfg.WorkerID = "second"
	w.cfg.HeartbeatInterval, w.cfg.StuckTimeout, w.cfg.RecoveryInterval = 50*time.Millisecond, 300*time.Millisecond, 50*time.Millisecond
	w.exec.KeepCompleted = true
	w.start()
	w.wait(1, queuemaxtype.EventCompleted)
	w.stop()
	if j := w.job(id); j.Status != store.StatusCompleted || ran.Load() != 1 {
		t.Errorf("job %d = %s, ran %d times by the second engine; want completed once", id, j.Status, ran.Load())
	}
}
