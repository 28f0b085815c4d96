package queuemax

import (
	"errors"
	"testing"
	"time"
)

// The queue limits' behaviour on running engines (one job at a time over
// two processes, a live change, the rate, prefetch under a saturated cap,
// slots renewed) is tested in runtime/engine (limits_queue_live_test.go);
// here SetQueueLimits' API on both stores.

func TestQueueLimits_API(t *testing.T) {
	t.Parallel()
	testQueueLimitsAPI(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_QueueLimitsAPI(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testQueueLimitsAPI(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}

// testQueueLimitsAPI: SetQueueLimits refuses a bad limit or queue name;
// a queue's limits show in Queues and Stats, seen by another client;
// cleared, they are gone.
func testQueueLimitsAPI(t *testing.T, cfg Config) {
	a := setup(t, cfg)
	cfg.WorkerID = "second"
	b := setup(t, cfg)
	ctx := a.ctx
	for _, bad := range []QueueLimits{{Concurrency: -1}, {Rate: Rate{Limit: 5}}, {Rate: Rate{Limit: -1, Per: time.Second}}} {
		if err := a.c.SetQueueLimits(ctx, "lim", bad); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("SetQueueLimits(%+v) = %v; want ErrInvalidLimit", bad, err)
		}
	}
	if err := a.c.SetQueueLimits(ctx, "Bad Name", QueueLimits{Concurrency: 1}); !errors.Is(err, ErrInvalidQueue) {
		t.Errorf("SetQueueLimits of a bad name = %v; want ErrInvalidQueue", err)
	}
	if err := a.c.SetQueueLimits(ctx, "lim", QueueLimits{Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.Enqueue(ctx, "t.QLim", echoArgs{}, Opts{Queue: "lim"}); err != nil {
		t.Fatal(err)
	}
	qs, err := b.c.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range qs {
		if q.Name == "lim" {
			found = true
			if q.Limits != (QueueLimits{Concurrency: 1}) {
				t.Errorf("Queues: lim Limits = %+v; want concurrency 1", q.Limits)
			}
		}
	}
	if !found {
		t.Errorf("Queues = %+v; want queue lim", qs)
	}
	s, err := b.c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.GlobalLimits) != 1 || s.GlobalLimits[0].Scope != "queue" || s.GlobalLimits[0].Name != "lim" ||
		s.GlobalLimits[0].Concurrency != 1 || s.GlobalLimits[0].Running != 0 {
		t.Errorf("Stats.GlobalLimits = %+v; want queue lim running 0/1", s.GlobalLimits)
	}
	if err := b.c.SetQueueLimits(ctx, "lim", QueueLimits{}); err != nil {
		t.Fatal(err)
	}
	if s, err := a.c.Stats(ctx); err != nil || len(s.GlobalLimits) != 0 {
		t.Errorf("Stats.GlobalLimits after clearing = %+v, %v; want none", s.GlobalLimits, err)
	}
}
