package storetest

import (
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testRecoveryArea runs the Recovery area: heartbeats keep a running job; orphan recovery returns stale ones (dead-lettering exhausted ones); Release refunds the attempt.
func testRecoveryArea(t *testing.T, s *suite) {
	t.Run("HeartbeatKeepsJobFromRecovery", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		insert(t, b, store.InsertParams{}, store.InsertParams{})
		jobs := claim(t, b, 2, t0)
		errs := b.st.Heartbeat(b.ctx, []store.Lease{{ID: jobs[0].ID, Token: jobs[0].Lease}}, t0.Add(50*time.Second))
		if errs[0] != nil {
			t.Fatalf("Heartbeat: %v", errs[0])
		}
		res, err := b.st.RecoverOrphans(b.ctx, t0.Add(30*time.Second), t0.Add(60*time.Second))
		if err != nil || res.Requeued != 1 {
			t.Fatalf("RecoverOrphans = %+v, %v; want only the silent job requeued", res, err)
		}
		j, _ := b.st.Job(b.ctx, jobs[1].ID)
		if j.Status != store.StatusPending || j.ErrorType != "OrphanRecovery" {
			t.Errorf("silent job = %s %s, want pending OrphanRecovery", j.Status, j.ErrorType)
		}
	})

	t.Run("DeadLettersExhaustedJobs", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		in := insert(t, b, store.InsertParams{MaxAttempts: 1})
		claim(t, b, 1, t0)
		res, err := b.st.RecoverOrphans(b.ctx, t0.Add(time.Minute), t0.Add(time.Minute))
		if err != nil || res != (store.RecoverResult{DeadLettered: 1}) {
			t.Fatalf("RecoverOrphans = %+v, %v; want 1 dead-lettered", res, err)
		}
		j, _ := b.st.Job(b.ctx, in[0])
		if j.Status != store.StatusFailed {
			t.Errorf("exhausted orphan status = %s, want failed", j.Status)
		}
		if s := stats(t, b); s.DeadLetters != 1 || s.TotalFailed != 1 {
			t.Errorf("dead letters=%d failed=%d, want 1 and 1", s.DeadLetters, s.TotalFailed)
		}
	})

	t.Run("ReleaseRefundsAttempt", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 1)
		in := insert(t, b, store.InsertParams{})
		j := claim(t, b, 1, t0)[0]
		if errs := b.st.Release(b.ctx, []store.Lease{{ID: j.ID, Token: j.Lease}}); errs[0] != nil {
			t.Fatalf("Release: %v", errs[0])
		}
		got, _ := b.st.Job(b.ctx, in[0])
		if got.Status != store.StatusPending || got.Attempts != 0 || got.WorkerID != "" {
			t.Errorf("released job = %s attempts=%d worker=%q, want pending, 0, none", got.Status, got.Attempts, got.WorkerID)
		}
	})
}
