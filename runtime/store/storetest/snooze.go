package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testSnooze checks FailParams.Snooze: the job waits until RetryAt without
// spending its attempt, its snooze count grows (Job, Jobs and Claim show
// it), its last error is kept, and a snooze of a job asked to cancel ends it
// cancelled.
func testSnooze(t *testing.T, st store.Store) {
	ctx := t.Context()
	ids, err := st.Insert(ctx, []store.InsertParams{{Task: "t.S", Payload: json.RawMessage(`{}`), MaxAttempts: 1, Now: t0}})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	id := ids[0]
	claim := func(now time.Time) *store.Job {
		t.Helper()
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: now})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		for _, j := range jobs {
			if j.ID == id {
				return j
			}
		}
		return nil
	}
	for n := 1; n <= 3; n++ {
		now := t0.Add(time.Duration(n-1) * time.Minute)
		j := claim(now)
		if j == nil {
			t.Fatalf("snooze %d: job not claimed at %v", n, now)
		}
		if j.Attempts != 1 || j.Snoozes != n-1 {
			t.Fatalf("claim %d: attempts %d, snoozes %d; want 1, %d", n, j.Attempts, j.Snoozes, n-1)
		}
		if err := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Error: "snoozed", ErrorType: "SnoozeError",
			Snooze: true, RetryAt: now.Add(time.Minute), Now: now}})[0]; err != nil {
			t.Fatalf("Fail(Snooze): %v", err)
		}
		got, err := st.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != store.StatusScheduled || got.Attempts != 0 || got.Snoozes != n || !got.NextRetryAt.Equal(now.Add(time.Minute)) || got.LastError != "" {
			t.Fatalf("after snooze %d: %s attempts %d snoozes %d next %v error %q; want scheduled, 0, %d, %v, no error",
				n, got.Status, got.Attempts, got.Snoozes, got.NextRetryAt, got.LastError, n, now.Add(time.Minute))
		}
		if j := claim(now.Add(time.Minute - time.Millisecond)); j != nil {
			t.Fatalf("snoozed job claimed before its time")
		}
	}
	list, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards, Task: "t.S"})
	if err != nil || len(list) != 1 || list[0].Snoozes != 3 {
		t.Fatalf("Jobs = %v, %v; want the job with 3 snoozes", list, err)
	}
	// A snooze of a job asked to cancel ends it cancelled.
	j := claim(t0.Add(3 * time.Minute))
	if _, err := st.Cancel(ctx, id, t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.Fail(ctx, []store.FailParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease}, Snooze: true,
		RetryAt: t0.Add(4 * time.Minute), Now: t0.Add(3 * time.Minute)}})[0]; err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Job(ctx, id); got == nil || got.Status != store.StatusCancelled {
		t.Errorf("snoozed after a cancel request: %v; want cancelled", got)
	}
}
