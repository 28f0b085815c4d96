package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/internal/pgtest"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/storetest"
)

// TestWfAckNotifiesReleases: a batch acknowledgement that releases
// dependents (jobs_ready skips its rows) notifies the jobs channel itself,
// once; one that releases none does not.
func TestWfAckNotifiesReleases(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s, err := Open(t.Context(), Options{DSN: dsn, Schema: pgtest.Schema(t, dsn), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	now := time.Now()
	for range 3 {
		if _, _, err := s.InsertWorkflow(ctx, &store.WorkflowParams{Name: "w", Now: now, Steps: []store.WorkflowStepParams{
			{Name: "a", Job: storetest.Job(now)},
			{Name: "b", Job: storetest.Job(now), After: []string{"a"}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close(context.Background())
	if _, err := lis.Exec(ctx, "LISTEN "+pgx.Identifier{s.schema + ".jobs"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	// notifications counts what arrives: the first within wait, any
	// more within a short while after it.
	notifications := func(wait time.Duration) int {
		n := 0
		for {
			wctx, cancel := context.WithTimeout(ctx, wait)
			wait = 300 * time.Millisecond
			_, err := lis.WaitForNotification(wctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	ack := func(wait time.Duration) int {
		jobs, err := s.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 10, Now: time.Now()})
		if err != nil || len(jobs) != 3 {
			t.Fatalf("Claim = %d jobs, %v; want 3", len(jobs), err)
		}
		notifications(300 * time.Millisecond) // none expected from the claim; drop any
		acks := make([]store.CompleteParams, len(jobs))
		for i, j := range jobs {
			acks[i] = store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Now: time.Now()}
		}
		for _, err := range s.Complete(ctx, acks) {
			if err != nil {
				t.Fatal(err)
			}
		}
		return notifications(wait)
	}
	if n := ack(10 * time.Second); n != 1 {
		t.Errorf("acknowledging 3 steps that release 3 dependents: %d notifications, want 1", n)
	}
	if n := ack(time.Second); n != 0 {
		t.Errorf("acknowledging 3 steps that release nothing: %d notifications, want 0", n)
	}
}
