package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testKeyedArea runs the per-key limits area (stores that implement
// store.KeyClaimer): peeking ready jobs with their key's value, claiming
// by id, per-key slots that expire with their owner's lease, and the
// sweep of per-key rows that hold nothing.
func testKeyedArea(t *testing.T, s *suite) {
	open := func(t *testing.T, shards int) (*testBundle, store.KeyClaimer, store.Limiter) {
		b := s.setup(t, shards)
		kc := b.st
		return b, kc, b.st
	}
	t.Run("PeekAndClaimIDs", func(t *testing.T) {
		t.Parallel()
		b, kc, _ := open(t, 1)
		ids := insert(t, b,
			store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"c":1,"n":0}`)},
			store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"n":1,"c":"x"}`)},
			store.InsertParams{Task: "t.Other", Payload: json.RawMessage(`{"c":1}`)},
			store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"n":2}`)},
			store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"c":null}`), Priority: 2},
		)
		p := store.ClaimParams{WorkerID: "w1", Now: t0, Tasks: []string{"t.K"}}
		cs, err := kc.PeekKeys(b.ctx, p, "c", 10)
		if err != nil {
			t.Fatalf("PeekKeys: %v", err)
		}
		want := []store.KeyCandidate{
			{ID: ids[4], Priority: 2, Value: "null"},
			{ID: ids[0], Value: "1"},
			{ID: ids[1], Value: `"x"`},
			{ID: ids[3], Missing: true},
		}
		if len(cs) != len(want) {
			t.Fatalf("PeekKeys = %+v; want %+v", cs, want)
		}
		for i := range want {
			cs[i].Queue = ""
			if cs[i] != want[i] {
				t.Errorf("candidate %d = %+v; want %+v", i, cs[i], want[i])
			}
		}
		if cs, _ := kc.PeekKeys(b.ctx, p, "c", 2); len(cs) != 2 {
			t.Errorf("PeekKeys with max 2 = %d candidates; want 2", len(cs))
		}
		jobs, err := kc.ClaimIDs(b.ctx, p, []store.JobID{ids[0], ids[3]})
		if err != nil || len(jobs) != 2 {
			t.Fatalf("ClaimIDs = %d jobs, %v; want 2", len(jobs), err)
		}
		for _, j := range jobs {
			if j.Status != store.StatusProcessing || j.WorkerID != "w1" || j.Attempts != 1 {
				t.Errorf("claimed %+v; want processing by w1, attempt 1", j)
			}
		}
		if jobs, err := kc.ClaimIDs(b.ctx, p, []store.JobID{ids[0], ids[3]}); err != nil || len(jobs) != 0 {
			t.Errorf("ClaimIDs of claimed jobs = %d, %v; want none", len(jobs), err)
		}
		if cs, _ := kc.PeekKeys(b.ctx, p, "c", 10); len(cs) != 2 {
			t.Errorf("PeekKeys after the claim = %+v; want the 2 jobs left", cs)
		}
	})
	t.Run("PeekAcrossShards", func(t *testing.T) {
		t.Parallel()
		b, kc, _ := open(t, 4)
		var batch []store.InsertParams
		for i := range 20 {
			batch = append(batch, store.InsertParams{Task: "t.K", Payload: json.RawMessage(`{"c":` + string(rune('0'+i%10)) + `}`)})
		}
		insert(t, b, batch...)
		p := store.ClaimParams{WorkerID: "w1", Now: t0, Tasks: []string{"t.K"}}
		cs, err := kc.PeekKeys(b.ctx, p, "c", 50)
		if err != nil || len(cs) != 20 {
			t.Fatalf("PeekKeys = %d, %v; want 20", len(cs), err)
		}
		ids := make([]store.JobID, len(cs))
		for i, c := range cs {
			ids[i] = c.ID
		}
		if jobs, err := kc.ClaimIDs(b.ctx, p, ids); err != nil || len(jobs) != 20 {
			t.Fatalf("ClaimIDs over the shards = %d, %v; want 20", len(jobs), err)
		}
	})
	t.Run("KeySlotsExpireAndGo", func(t *testing.T) {
		t.Parallel()
		_, kc, l := open(t, 1)
		ctx := t.Context()
		sc := store.TaskScope("t.K")
		conc := store.LimitRule{Concurrency: 1}
		exp := t0.Add(time.Minute)
		take := func(owner, key string, at time.Time) int {
			t.Helper()
			g, err := l.LimitTake(ctx, owner, []store.LimitTake{{Scope: sc, Key: key, Rule: conc, Want: 1}}, at, at.Add(time.Minute))
			if err != nil {
				t.Fatalf("LimitTake: %v", err)
			}
			return g[0].N
		}
		if take("p1", "c=1", t0) != 1 || take("p1", "c=2", t0) != 1 {
			t.Fatal("first takes of two keys: want one slot each")
		}
		if n := take("p2", "c=1", t0); n != 0 {
			t.Fatalf("p2 took %d of key c=1 held by p1; want 0", n)
		}
		if n := take("p2", "c=3", t0); n != 1 {
			t.Fatalf("p2 took %d of key c=3; want 1 (another key's limit)", n)
		}
		// p1 is killed: it never gives back nor renews. Its slots are
		// free once they expired.
		if n := take("p2", "c=1", exp); n != 1 {
			t.Fatalf("p2 took %d of key c=1 after p1's lease expired; want 1", n)
		}
		if err := l.LimitGive(ctx, "p2", []store.LimitGive{{Scope: sc, Key: "c=1", Slots: 1}, {Scope: sc, Key: "c=3", Slots: 1}}, exp); err != nil {
			t.Fatalf("LimitGive: %v", err)
		}
		us, err := l.LimitUsage(ctx, exp)
		if err != nil {
			t.Fatal(err)
		}
		// c=1 and c=3 hold nothing and are gone; c=2 holds p1's expired
		// slot until the sweep.
		if len(us) != 1 || us[0].Key != "c=2" || us[0].Running != 0 {
			t.Fatalf("LimitUsage = %+v; want only c=2, with nothing running", us)
		}
		n, err := kc.LimitSweep(ctx, []string{sc}, exp.Add(time.Minute), 30*time.Second)
		if err != nil || n != 1 {
			t.Fatalf("LimitSweep = %d, %v; want 1 row", n, err)
		}
		if us, _ := l.LimitUsage(ctx, exp); len(us) != 0 {
			t.Fatalf("LimitUsage after the sweep = %+v; want none", us)
		}
	})
	t.Run("SweepKeepsLiveRows", func(t *testing.T) {
		t.Parallel()
		_, kc, l := open(t, 1)
		ctx := t.Context()
		sc := store.TaskScope("t.R")
		rate := store.LimitRule{Rate: 2, Per: time.Second}
		for _, k := range []string{"", "c=1"} {
			if _, err := l.LimitTake(ctx, "p", []store.LimitTake{{Scope: sc, Key: k, Rule: rate, Want: 1}}, t0, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := kc.LimitSweep(ctx, []string{sc}, t0.Add(time.Second), 5*time.Second); err != nil || n != 0 {
			t.Fatalf("LimitSweep of a recent row = %d, %v; want 0", n, err)
		}
		// Later, the keyed row goes; the task's own row (key "") stays.
		if n, err := kc.LimitSweep(ctx, []string{sc}, t0.Add(time.Minute), 5*time.Second); err != nil || n != 1 {
			t.Fatalf("LimitSweep = %d, %v; want 1 (the keyed row)", n, err)
		}
		us, _ := l.LimitUsage(ctx, t0)
		if len(us) != 1 || us[0].Key != "" {
			t.Fatalf("LimitUsage = %+v; want only the task's own row", us)
		}
	})
	t.Run("KeyHeads", func(t *testing.T) { testKeyHeads(t, s) })
}
