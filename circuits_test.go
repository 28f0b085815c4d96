package queuemax

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type chargeArgs struct {
	URL  string `json:"url"`
	Down bool   `json:"down"`
}

// testSharedBreaker is issue 23's story on one store (base says which):
// two worker processes (clients) and an observer with no handlers.
// Bad-input failures open no breaker and a good job runs; dependency
// failures open the one stored breaker, which both workers and the
// observer see; a job it holds says why; after the timeout (a fake
// clock) a probe runs the job that never ran, and the breaker closes.
func testSharedBreaker(t *testing.T, base func() Config) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	h := Define("shop.Charge", TaskOptions{MaxRetries: Ptr(0)}, func(_ context.Context, a chargeArgs) error {
		switch {
		case a.Down:
			return Unavailable(errors.New("payments API: 503"))
		case strings.HasPrefix(a.URL, "http://"):
			return fmt.Errorf("charge: refusing insecure URL %q", a.URL)
		}
		return nil
	})
	open := func(handlers ...Handler) *testBundle {
		cfg := base()
		cfg.Handlers, cfg.CircuitThreshold, cfg.CircuitTimeout, cfg.now = handlers, 2, 10*time.Minute, clock
		return setup(t, cfg)
	}
	a, b, obs := open(h), open(h), open()
	evs := []<-chan Event{collect(a.c, EventCompleted, EventFailed), collect(b.c, EventCompleted, EventFailed)}
	run(t, a.c)
	run(t, b.c)
	ctx := obs.ctx
	// wait returns the next n completions or failures, from either worker.
	wait := func(n int) (kinds []EventKind) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for len(kinds) < n {
			select {
			case e := <-evs[0]:
				kinds = append(kinds, e.Kind)
			case e := <-evs[1]:
				kinds = append(kinds, e.Kind)
			case <-timeout:
				t.Fatalf("got %v, want %d events", kinds, n)
			}
		}
		return kinds
	}
	enqueue := func(args chargeArgs) JobID {
		t.Helper()
		id, err := obs.c.Enqueue(ctx, "shop.Charge", args, Opts{MaxRetries: Ptr(0)})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	breakerOf := func() CircuitBreakerInfo {
		t.Helper()
		bs, err := obs.c.CircuitBreakers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, br := range bs {
			if br.Task == "shop.Charge" {
				return br
			}
		}
		return CircuitBreakerInfo{Task: "shop.Charge", State: "closed"}
	}

	enqueue(chargeArgs{URL: "http://shop.example/a"})
	enqueue(chargeArgs{URL: "http://shop.example/b"})
	if got := wait(2); got[0] != EventFailed || got[1] != EventFailed {
		t.Fatalf("bad-input jobs: %v, want two failures", got)
	}
	enqueue(chargeArgs{URL: "https://shop.example/good"})
	if got := wait(1); got[0] != EventCompleted {
		t.Fatalf("good job after two bad-input failures: %v, want it completed", got)
	}
	if br := breakerOf(); br.State != "closed" || br.Failures != 0 {
		t.Fatalf("breaker after bad input = %+v, want closed with 0 failures", br)
	}

	// Two dependency failures open the task's one breaker.
	enqueue(chargeArgs{Down: true})
	enqueue(chargeArgs{Down: true})
	wait(2)
	br := breakerOf()
	if br.State != "open" || br.Failures != 2 || br.LastError == "" || !strings.Contains(br.Held, "is open until") {
		t.Fatalf("breaker after 2 dependency failures = %+v, want open with 2 failures", br)
	}
	waitFor(t, "both workers to see the open breaker", func() bool {
		return a.c.CircuitStates()["shop.Charge"] == "open" && b.c.CircuitStates()["shop.Charge"] == "open"
	})
	s, err := obs.c.Stats(ctx)
	if err != nil || s.CircuitState != "open" || s.CircuitFailures != 2 || s.Circuits["shop.Charge"] != "open" {
		t.Fatalf("observer's Stats: circuit %s (%d failures), circuits %v, err %v; want open with 2 failures",
			s.CircuitState, s.CircuitFailures, s.Circuits, err)
	}
	// One dependency down is a degraded task, never an unhealthy queue.
	if !s.IsHealthy || len(s.Degraded) != 1 || s.Degraded[0] != "shop.Charge" {
		t.Fatalf("observer's Stats: healthy %v, degraded %v; want healthy with shop.Charge degraded", s.IsHealthy, s.Degraded)
	}
	if hl, err := obs.c.Health(ctx); err != nil || hl.Status != HealthDegraded || len(hl.Problems) != 0 ||
		len(hl.Degraded) != 1 || hl.Degraded[0].Task != "shop.Charge" || hl.Degraded[0].Breaker != "open" || hl.Workers != 2 {
		t.Fatalf("Health with an open breaker = %+v, %v; want degraded for shop.Charge only, 2 workers", hl, err)
	}
	if err := obs.c.Ready(ctx); err != nil {
		t.Fatalf("Ready with an open breaker: %v", err)
	}
	held := enqueue(chargeArgs{URL: "https://shop.example/held"})
	j, err := obs.c.Job(ctx, held)
	if err != nil || j.Status != StatusPending || !strings.HasPrefix(j.Held, "circuit breaker of task shop.Charge is open until ") ||
		!strings.Contains(j.Held, "after 2 dependency failures") {
		t.Fatalf("held job = %+v, %v; want pending and held by the open breaker", j, err)
	}
	if js, err := obs.c.Jobs(ctx, ListParams{Status: StatusPending}); err != nil || len(js) != 1 || js[0].Held != j.Held {
		t.Fatalf("Jobs(pending) = %v, %v; want the held job with its reason", js, err)
	}

	// The open period ends: a probe runs the held job (it never ran) and
	// closes the breaker for every process.
	skew.Store(int64(10*time.Minute + time.Second))
	if got := wait(1); got[0] != EventCompleted {
		t.Fatalf("probe: %v, want the held job completed", got)
	}
	waitFor(t, "the breaker to close", func() bool { return breakerOf().State == "closed" })
	if j, err := obs.c.Job(ctx, held); err == nil && j.Held != "" {
		t.Errorf("job after the close still held: %q", j.Held)
	}
	waitFor(t, "both workers to see the closed breaker", func() bool {
		return a.c.CircuitStates()["shop.Charge"] == "closed" && b.c.CircuitStates()["shop.Charge"] == "closed"
	})
	if hl, err := obs.c.Health(ctx); err != nil || hl.Status != HealthOK || len(hl.Degraded) != 0 {
		t.Fatalf("Health after the close = %+v, %v; want ok", hl, err)
	}
}

func TestBreakers_SharedSQLite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testSharedBreaker(t, func() Config { return Config{Dir: dir, Shards: 2} })
}

func TestBreakers_SharedPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	schema := pgTestSchema(t, dsn)
	testSharedBreaker(t, func() Config { return Config{Store: &pgTarget{dsn: dsn, schema: schema}} })
}
