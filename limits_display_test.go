package queuemax

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testQueueLimitSlotsShown: a queue limit's use separates the queue's
// jobs that run from the slots processes hold. Another process holds
// both slots of queue crm's cap of 2 (as it does to prefetch) while no
// job of crm runs: Stats says running 0/2 with 2 slots held; once one
// job of crm is claimed, running 1/2.
func testQueueLimitSlotsShown(t *testing.T, cfg Config) {
	b := setup(t, cfg)
	ctx := b.ctx
	if err := b.c.SetQueueLimits(ctx, "crm", QueueLimits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	now := b.c.now()
	lim := b.c.st
	take := []store.LimitTake{{Scope: store.QueueScope("crm"), Rule: store.LimitRule{Concurrency: 2}, Want: 2}}
	if g, err := lim.LimitTake(ctx, "other-process", take, now, now.Add(time.Hour)); err != nil || g[0].N != 2 {
		t.Fatalf("LimitTake = %+v, %v; want 2 slots", g, err)
	}
	crm := func() GlobalLimitInfo {
		t.Helper()
		s, err := b.c.Stats(ctx)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		for _, g := range s.GlobalLimits {
			if g.Scope == "queue" && g.Name == "crm" {
				return g
			}
		}
		t.Fatalf("Stats.GlobalLimits = %+v; want queue crm", s.GlobalLimits)
		return GlobalLimitInfo{}
	}
	g := crm()
	if g.Running != 0 || g.Slots != 2 {
		t.Errorf("queue crm with no job and 2 slots held: Running %d, Slots %d; want 0, 2", g.Running, g.Slots)
	}
	if want := "queue crm: running 0/2, 2 slots held"; g.String() != want {
		t.Errorf("String() = %q; want %q", g.String(), want)
	}
	js, _ := json.Marshal(g)
	if !strings.Contains(string(js), `"running":0`) || !strings.Contains(string(js), `"slots":2`) {
		t.Errorf("JSON %s; want running 0 and slots 2", js)
	}
	if _, err := b.c.Enqueue(ctx, "t.Crm", map[string]int{"n": 1}, Opts{Queue: "crm"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.c.st.Claim(ctx, store.ClaimParams{WorkerID: "other-process", Max: 1, Now: now,
		Queues: []store.QueueLimit{{Queue: "crm", Max: 1}}})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim = %d jobs, %v; want the crm job", len(jobs), err)
	}
	if g := crm(); g.Running != 1 || g.Slots != 2 {
		t.Errorf("queue crm with one job claimed: Running %d, Slots %d; want 1, 2", g.Running, g.Slots)
	}
}

func TestQueueLimits_SlotsShown(t *testing.T) {
	t.Parallel()
	testQueueLimitSlotsShown(t, Config{Dir: t.TempDir(), Shards: 2})
}

func TestPostgres_QueueLimitsSlotsShown(t *testing.T) {
	t.Parallel()
	dsn := pgTestDSN(t)
	testQueueLimitSlotsShown(t, Config{Store: &pgTarget{dsn: dsn, schema: pgTestSchema(t, dsn)}})
}
