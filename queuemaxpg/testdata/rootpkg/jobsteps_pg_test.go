package queuemax_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax"
)

// TestStep_PostgresTx: with the PostgreSQL store a step records its result
// in the application's transaction: a rolled-back transaction leaves the
// step to run again, a committed one makes its writes and the step's
// result durable together, and later attempts skip the step.
func TestStep_PostgresTx(t *testing.T) {
	t.Parallel()
	p := setupPGTx(t)
	var (
		rollback, failAfter atomic.Bool
		charges             atomic.Int32
		typeErr, cursorErr  = make(chan error, 5), make(chan error, 5)
	)
	rollback.Store(true)
	failAfter.Store(true)
	c := p.open(t, queuemax.Define("t.Charge", queuemax.TaskOptions{MaxRetries: queuemax.Ptr(5)}, func(ctx context.Context, _ struct{}) error {
		n, err := queuemax.Step(ctx, "charge", func(ctx context.Context) (int, error) {
			charges.Add(1)
			tx, err := p.pool.Begin(ctx)
			if err != nil {
				return 0, err
			}
			defer tx.Rollback(context.WithoutCancel(ctx))
			if _, err := tx.Exec(ctx, "INSERT INTO "+p.schema+".users (email) VALUES ('a@x')"); err != nil {
				return 0, err
			}
			typeErr <- queuemax.SetStepTx(ctx, tx, "not an int")
			if err := queuemax.SetStepTx(ctx, tx, 42); err != nil {
				return 0, err
			}
			if rollback.Load() {
				return 0, queuemax.RetryAfter(time.Nanosecond, errors.New("rolled back"))
			}
			return 42, tx.Commit(ctx)
		})
		if err != nil {
			return err
		}
		if n != 42 {
			t.Errorf("charge = %d, want 42", n)
		}
		return queuemax.Do(ctx, "after", func(ctx context.Context) error {
			tx, err := p.pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(context.WithoutCancel(ctx))
			cursorErr <- queuemax.SetCursorTx(ctx, tx, map[string]int{"row": 7})
			if err := tx.Commit(ctx); err != nil {
				return err
			}
			if failAfter.Load() {
				return queuemax.RetryAfter(time.Nanosecond, errors.New("later"))
			}
			return nil
		})
	}))
	ctx := t.Context()
	id, err := c.Enqueue(ctx, "t.Charge", struct{}{}, queuemax.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	work := func() queuemax.WorkResult {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			jobs, err := c.Claim(ctx, "test", 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) == 1 {
				res, err := c.Work(ctx, jobs[0])
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			if time.Now().After(deadline) {
				t.Fatal("no job became ready")
			}
		}
	}
	steps := func() []queuemax.JobStep {
		t.Helper()
		j, err := c.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Steps
	}

	if res := work(); res.Outcome != queuemax.OutcomeRetry || p.users(t) != 0 || len(steps()) != 0 {
		t.Fatalf("rolled back: outcome %s, %d users, steps %+v; want a retry with nothing written", res.Outcome, p.users(t), steps())
	}
	if err := <-typeErr; err == nil || !strings.Contains(err.Error(), `step "charge" returns int, got a string`) {
		t.Errorf("SetStepTx(wrong type) error = %v, want one naming both types", err)
	}
	rollback.Store(false)
	if res := work(); res.Outcome != queuemax.OutcomeRetry || p.users(t) != 1 {
		t.Fatalf("committed: outcome %s, %d users; want a retry (of the next step) with the user written", res.Outcome, p.users(t))
	}
	if err := <-cursorErr; err != nil {
		t.Errorf("SetCursorTx: %v", err)
	}
	got := steps()
	if len(got) != 2 || got[0].Name != "charge" || !got[0].Done || string(got[0].Result) != "42" ||
		got[1].Name != "after" || got[1].Done || string(got[1].Cursor) != `{"row": 7}` && string(got[1].Cursor) != `{"row":7}` {
		t.Errorf("steps after the commit = %+v, want charge done with 42, then after at cursor row 7", got)
	}
	failAfter.Store(false)
	res := work()
	if res.Outcome != queuemax.OutcomeCompleted || charges.Load() != 2 || p.users(t) != 1 {
		t.Fatalf("last attempt: outcome %s (%v), %d charges, %d users; want completed, charge not run again", res.Outcome, res.Err, charges.Load(), p.users(t))
	}
	if diff := cmp.Diff([]string{"charge"}, res.StepsSkipped); diff != "" {
		t.Errorf("StepsSkipped mismatch (-want +got):\n%s", diff)
	}
	var _ pgx.Tx // the transaction type SetStepTx takes here
}
