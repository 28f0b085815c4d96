package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testKeyHeads: KeyHeads finds the first ready job of every key however
// many jobs of other keys are ahead of it in claim order, leaves out the
// keys it is told to skip, follows the queue filter and paused queues,
// and orders the heads as a claim would.
func testKeyHeads(t *testing.T, s *suite) {
	t.Run("BehindABacklog", func(t *testing.T) {
		t.Parallel()
		for _, shards := range []int{1, 3} {
			t.Run(fmt.Sprint(shards, "Shards"), func(t *testing.T) {
				b := s.setup(t, shards)
				kc := b.st
				// 600 jobs of customer "a" first (over the shards, in
				// order), then in shard 0, then one of "b", one of
				// "d", one without the key, one with a higher priority of
				// "c", and jobs of another task with the key.
				var batch []store.InsertParams
				for i := range 600 {
					batch = append(batch, store.InsertParams{Shard: i * shards / 600, Task: "t.K", Payload: json.RawMessage(fmt.Sprintf(`{"c":"a","n":%d}`, i))})
				}
				batch = append(batch,
					store.InsertParams{Shard: 0, Task: "t.K", Payload: json.RawMessage(`{"c":"b"}`)},
					store.InsertParams{Shard: 0, Task: "t.K", Payload: json.RawMessage(`{"n":1,"c":"d"}`)},
					store.InsertParams{Shard: 0, Task: "t.K", Payload: json.RawMessage(`{"n":2}`)},
					store.InsertParams{Shard: 0, Task: "t.K", Payload: json.RawMessage(`{"c":"c"}`), Priority: 3},
					store.InsertParams{Shard: 0, Task: "t.Other", Payload: json.RawMessage(`{"c":"z"}`)},
				)
				ids := insert(t, b, batch...)
				p := store.ClaimParams{WorkerID: "w1", Now: t0, Tasks: []string{"t.K"}, Order: []int{0, 1, 2}[:shards]}
				heads, stop, err := kc.KeyHeads(b.ctx, p, "c", "", []string{`c="a"`}, 10)
				if err != nil || stop != "" {
					t.Fatalf("KeyHeads = %v, stopped at %q; want the end", err, stop)
				}
				want := []store.KeyCandidate{
					{ID: ids[603], Priority: 3, Value: `"c"`},
					{ID: ids[602], Missing: true},
					{ID: ids[600], Value: `"b"`},
					{ID: ids[601], Value: `"d"`},
				}
				checkHeads(t, "KeyHeads skipping a", heads, want)
				// Keys walk in the order of their JSON text (the missing key
				// first): "a", "b", "c", "d"; the heads come by priority,
				// then in that order.
				heads, stop, err = kc.KeyHeads(b.ctx, p, "c", "", []string{`c="c"`, "c="}, 2)
				if err != nil || stop == "" {
					t.Fatalf("KeyHeads with max 2 = %v, stopped at %q; want a stop", err, stop)
				}
				checkHeads(t, "KeyHeads skipping c and the missing key, max 2", heads, []store.KeyCandidate{
					{ID: ids[0], Value: `"a"`}, {ID: ids[600], Value: `"b"`}})
				// The next walk resumes after where this one stopped.
				heads, _, err = kc.KeyHeads(b.ctx, p, "c", `"b"`, nil, 10)
				if err != nil {
					t.Fatal(err)
				}
				checkHeads(t, `KeyHeads after "b"`, heads, []store.KeyCandidate{{ID: ids[603], Priority: 3, Value: `"c"`}, {ID: ids[601], Value: `"d"`}})
				// Claimed heads give way to the next job of their key.
				if jobs, err := kc.ClaimIDs(b.ctx, p, []store.JobID{ids[0], ids[600]}); err != nil || len(jobs) != 2 {
					t.Fatalf("ClaimIDs = %d, %v; want 2", len(jobs), err)
				}
				heads, _, _ = kc.KeyHeads(b.ctx, p, "c", "", []string{`c="c"`, "c=", `c="d"`}, 10)
				checkHeads(t, "KeyHeads after claiming a and b", heads, []store.KeyCandidate{{ID: ids[1], Value: `"a"`}})
			})
		}
	})
	t.Run("Queues", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		kc := b.st
		qa := b.st
		ids := insert(t, b,
			store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"c":1}`), Queue: "slow"},
			store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"c":1}`), Queue: "fast"},
			store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"c":2}`), Queue: "slow"},
		)
		p := store.ClaimParams{WorkerID: "w1", Now: t0, Tasks: []string{"t.K"}}
		heads, _, err := kc.KeyHeads(b.ctx, p, "c", "", nil, 10)
		if err != nil {
			t.Fatalf("KeyHeads: %v", err)
		}
		checkHeads(t, "KeyHeads", heads, []store.KeyCandidate{{ID: ids[0], Value: "1"}, {ID: ids[2], Value: "2"}})
		if err := qa.QueuePause(b.ctx, "slow", t0); err != nil {
			t.Fatal(err)
		}
		heads, _, _ = kc.KeyHeads(b.ctx, p, "c", "", nil, 10)
		checkHeads(t, "KeyHeads with slow paused", heads, []store.KeyCandidate{{ID: ids[1], Value: "1"}})
		if err := qa.QueueResume(b.ctx, "slow", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		p.Queues = []store.QueueLimit{{Queue: "slow", Max: 5}}
		heads, _, _ = kc.KeyHeads(b.ctx, p, "c", "", nil, 10)
		checkHeads(t, "KeyHeads of queue slow", heads, []store.KeyCandidate{{ID: ids[0], Value: "1"}, {ID: ids[2], Value: "2"}})
		if _, _, err := kc.KeyHeads(b.ctx, p, `c"; DROP TABLE x; --`, "", nil, 10); err == nil {
			t.Error("KeyHeads with a key that is no key name: want an error")
		}
	})
}

func checkHeads(t *testing.T, what string, got, want []store.KeyCandidate) {
	t.Helper()
	for i := range got {
		got[i].Queue = ""
	}
	if len(got) != len(want) {
		t.Fatalf("%s = %+v; want %+v", what, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: head %d = %+v; want %+v", what, i, got[i], want[i])
		}
	}
}

// BenchmarkKeyHeads measures one KeyHeads call (max 16) over a backlog of
// 100,000 ready jobs of one task: "OneKey", 100,000 jobs of one key (at
// its limit, skipped) ahead of one job of another; "10000Keys", 10,000
// keys of 10 jobs each, all at their limit (skipped), and one job of one
// more key (the walk visits every key); "10000KeysFree", the same with
// no key at its limit (the walk stops after 16 keys). The jobs are
// inserted before the timer starts.
func BenchmarkKeyHeads(b *testing.B, open func(b *testing.B) store.Store) {
	const backlog = 100_000
	run := func(b *testing.B, keys int, blocked bool) {
		st := open(b)
		kc := st
		ctx := b.Context()
		batch := make([]store.InsertParams, 0, 1000)
		var skip []string
		for k := range keys {
			skip = append(skip, fmt.Sprintf("c=%d", k))
		}
		for i := range backlog {
			batch = append(batch, store.InsertParams{Task: "t.K", Payload: json.RawMessage(fmt.Sprintf(`{"c":%d,"n":%d}`, i%keys, i)),
				MaxAttempts: 1, Now: t0})
			if len(batch) == cap(batch) {
				if _, err := st.Insert(ctx, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if _, err := st.Insert(ctx, []store.InsertParams{{Task: "t.K", Payload: json.RawMessage(`{"c":"new"}`), MaxAttempts: 1, Now: t0}}); err != nil {
			b.Fatal(err)
		}
		p := store.ClaimParams{WorkerID: "w1", Now: t0, Tasks: []string{"t.K"}}
		skip = append(skip, "c=")
		want := 1
		if !blocked {
			skip, want = nil, 16
		}
		if hs, _, err := kc.KeyHeads(ctx, p, "c", "", skip, 16); err != nil || len(hs) != want || blocked && hs[0].Value != `"new"` {
			b.Fatalf("KeyHeads = %+v, %v; want %d heads", hs, err, want)
		}
		b.ResetTimer()
		for range b.N {
			if hs, _, err := kc.KeyHeads(ctx, p, "c", "", skip, 16); err != nil || len(hs) != want {
				b.Fatalf("KeyHeads = %+v, %v", hs, err)
			}
		}
	}
	b.Run("OneKey", func(b *testing.B) { run(b, 1, true) })
	b.Run("10000Keys", func(b *testing.B) { run(b, 10_000, true) })
	b.Run("10000KeysFree", func(b *testing.B) { run(b, 10_000, false) })
}

// BenchmarkClaimBehindPaused measures one claim of one job of the default
// queue behind 100,000 ready jobs of a paused queue ahead of it in claim
// order ("Paused"), behind 100,000 of a queue at its cap ("Capped": the
// claim caps that queue at 0; "Skipped": the claim of the other queues
// leaves it out, as a round does once the capped queue was claimed
// apart), and one job of a named queue behind 100,000 of the paused
// default queue ("PausedDefault").
func BenchmarkClaimBehindPaused(b *testing.B, open func(b *testing.B) store.Store) {
	const backlog = 100_000
	run := func(b *testing.B, mode string) {
		st := open(b)
		ctx := b.Context()
		batch := make([]store.InsertParams, 0, 1000)
		add := func(q string, n int) {
			for i := range n {
				batch = append(batch, store.InsertParams{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Queue: q, Now: t0})
				if len(batch) == cap(batch) || i == n-1 {
					if _, err := st.Insert(ctx, batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
		}
		held, want := "p", store.DefaultQueue
		if mode == "PausedDefault" {
			held, want = store.DefaultQueue, "q"
		}
		add(held, backlog)
		add(want, b.N)
		p := store.ClaimParams{WorkerID: "w1", Max: 1, Now: t0}
		switch mode {
		case "Paused", "PausedDefault":
			if err := st.QueuePause(ctx, held, t0); err != nil {
				b.Fatal(err)
			}
		case "Capped":
			p.Queues = []store.QueueLimit{{Queue: held, Max: 0}, {Queue: want, Max: 1}}
		case "Skipped":
			p.SkipQueues = []string{held}
		}
		b.ResetTimer()
		for range b.N {
			if jobs, err := st.Claim(ctx, p); err != nil || len(jobs) != 1 || store.QueueOf(jobs[0].Queue) != want {
				b.Fatalf("Claim = %d jobs, %v", len(jobs), err)
			}
		}
	}
	for _, mode := range []string{"Paused", "Capped", "Skipped", "PausedDefault"} {
		b.Run(mode, func(b *testing.B) { run(b, mode) })
	}
}
