package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// testRetryArea runs the Retry area: failures retry with backoff until the last attempt dead-letters the job; RetryFailed and RequeueDead give a fresh budget.
func testRetryArea(t *testing.T, s *suite) {
	t.Run("FailRetryThenDead", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		in := insert(t, b, store.InsertParams{Task: "t.F", MaxAttempts: 2})
		j := claim(t, b, 1, t0)[0]
		errs := b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Error: "boom",
			ErrorType: "*errors.errorString", RetryAt: t0.Add(2 * time.Minute), Now: t0}})
		if errs[0] != nil {
			t.Fatalf("Fail(retry): %v", errs[0])
		}
		got, _ := b.st.Job(b.ctx, in[0])
		if got.Status != store.StatusScheduled || !got.NextRetryAt.Equal(t0.Add(2*time.Minute)) || got.LastError != "boom" || got.Lease != 0 {
			t.Errorf("after retryable failure job = %s next=%v err=%q lease=%d, want scheduled at +2m", got.Status, got.NextRetryAt, got.LastError, got.Lease)
		}
		if c := claim(t, b, 1, t0.Add(time.Minute)); len(c) != 0 {
			t.Fatalf("Claim before retry time = %d jobs, want 0", len(c))
		}
		j = claim(t, b, 1, t0.Add(2*time.Minute))[0]
		if j.Attempts != 2 || j.LastError != "boom" {
			t.Errorf("second claim attempts=%d last_error=%q, want 2 and boom", j.Attempts, j.LastError)
		}
		errs = b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Error: "boom again",
			ErrorType: "E", Stack: "stack", Dead: true, Now: t0.Add(3 * time.Minute)}})
		if errs[0] != nil {
			t.Fatalf("Fail(dead): %v", errs[0])
		}
		if s := stats(t, b); counts(s) != [6]int64{0, 0, 0, 1, 0, 1} || s.TotalFailed != 1 {
			t.Errorf("stats = %v failed=%d, want 1 failed, 1 dead letter", counts(s), s.TotalFailed)
		}
		dl, err := b.st.DeadLetters(b.ctx, store.ListParams{Shard: store.AllShards})
		if err != nil || len(dl) != 1 {
			t.Fatalf("DeadLetters = %v, %v; want one", dl, err)
		}
		want := &store.DeadLetter{ID: dl[0].ID, Shard: 0, OriginalJobID: in[0], Task: "t.F", Payload: json.RawMessage(`{"n":0}`),
			Error: "boom again", ErrorType: "E", Attempts: 2, FailedAt: t0.Add(3 * time.Minute)}
		if diff := cmp.Diff(want, dl[0]); diff != "" {
			t.Errorf("dead letter mismatch (-want +got):\n%s", diff)
		}
		// Retrying resets the attempt budget and removes the dead letter.
		if err := b.st.RetryJob(b.ctx, in[0], t0.Add(4*time.Minute)); err != nil {
			t.Fatalf("RetryJob: %v", err)
		}
		got, _ = b.st.Job(b.ctx, in[0])
		if got.Status != store.StatusPending || got.Attempts != 0 || got.RemainingRetries() != 2 {
			t.Errorf("after RetryJob: %s attempts=%d, want pending with 0 attempts", got.Status, got.Attempts)
		}
		if s := stats(t, b); s.DeadLetters != 0 {
			t.Errorf("dead letters after retry = %d, want 0", s.DeadLetters)
		}
		if err := b.st.RetryJob(b.ctx, in[0], t0); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("RetryJob(pending job) error = %v, want ErrJobNotFound", err)
		}
	})

	t.Run("RetryFailedAllAndOneShard", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		insert(t, b, store.InsertParams{Shard: 0}, store.InsertParams{Shard: 1}, store.InsertParams{Shard: 1})
		for _, j := range claim(t, b, 3, t0) {
			b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Dead: true, Error: "x", ErrorType: "x", Now: t0}})
		}
		n, err := b.st.RetryFailed(b.ctx, 1, t0)
		if err != nil || n != 2 {
			t.Fatalf("RetryFailed(shard 1) = %d, %v; want 2", n, err)
		}
		n, err = b.st.RetryFailed(b.ctx, store.AllShards, t0)
		if err != nil || n != 1 {
			t.Fatalf("RetryFailed(all) = %d, %v; want 1", n, err)
		}
		if s := stats(t, b); counts(s) != [6]int64{3, 0, 0, 0, 0, 0} {
			t.Errorf("stats after retries = %v, want 3 pending and no dead letters", counts(s))
		}
		if _, err := b.st.RetryFailed(b.ctx, 2, t0); !errors.Is(err, store.ErrInvalidShard) {
			t.Errorf("RetryFailed(shard 2 of 2) error = %v, want ErrInvalidShard", err)
		}
	})

	t.Run("RequeueDead", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		in := insert(t, b, store.InsertParams{Task: "t.R"}, store.InsertParams{Task: "t.R"})
		for _, j := range claim(t, b, 2, t0) {
			b.st.Fail(b.ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Dead: true, Error: "x", ErrorType: "x", Now: t0}})
		}
		// A task's defaults, looked up by the dead letter's task name.
		requeue := store.RequeueParams{Now: t0, Defaults: map[string]store.TaskDefaults{"t.R": {Priority: store.PriorityHigh, MaxAttempts: 7}}}
		dl, _ := b.st.DeadLetters(b.ctx, store.ListParams{Shard: store.AllShards})
		if len(dl) != 2 {
			t.Fatalf("dead letters = %d, want 2", len(dl))
		}
		// The first dead letter's queue row still exists: it is re-queued
		// with its own settings and a fresh budget.
		first := dl[len(dl)-1]
		if first.OriginalJobID != in[0] {
			t.Fatalf("oldest dead letter is job %d, want %d", first.OriginalJobID, in[0])
		}
		id, err := b.st.RequeueDead(b.ctx, first.Shard, first.ID, requeue)
		if err != nil || id != in[0] {
			t.Fatalf("RequeueDead(first) = %d, %v; want job %d", id, err, in[0])
		}
		if j, _ := b.st.Job(b.ctx, id); j.Status != store.StatusPending || j.Attempts != 0 || j.MaxAttempts != 4 {
			t.Errorf("requeued existing job = %+v, want pending, 0 of 4 attempts", j)
		}
		// The second job's row is cleaned up; requeueing re-creates it with
		// its task's defaults.
		if _, err := b.st.Purge(b.ctx, []store.Status{store.StatusFailed}); err != nil {
			t.Fatal(err)
		}
		second := dl[0]
		id, err = b.st.RequeueDead(b.ctx, second.Shard, second.ID, requeue)
		if err != nil || id == in[1] {
			t.Fatalf("RequeueDead(second) = %d, %v; want a new job", id, err)
		}
		j, err := b.st.Job(b.ctx, id)
		if err != nil || j.Status != store.StatusPending || j.Task != "t.R" || string(j.Payload) != string(second.Payload) ||
			j.Attempts != 0 || j.MaxAttempts != 7 || j.Priority != store.PriorityHigh {
			t.Errorf("re-created job = %+v, %v; want pending t.R with the dead letter's payload, the task's 7 attempts and priority", j, err)
		}
		if s := stats(t, b); s.DeadLetters != 0 || s.Pending != 2 {
			t.Errorf("after requeue dead=%d pending=%d, want 0 and 2", s.DeadLetters, s.Pending)
		}
		if _, err := b.st.RequeueDead(b.ctx, 0, 999, requeue); !errors.Is(err, store.ErrJobNotFound) {
			t.Errorf("RequeueDead(missing) error = %v, want ErrJobNotFound", err)
		}
	})
}
