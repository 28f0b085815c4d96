package queuemaxtest_test

import (
	"context"
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/queuemaxtest"
)

type receipt struct {
	ID    string `json:"id"`
	Cents int    `json:"cents"`
}

func TestSetStepsDone(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var charged []receipt
			order := queuemax.Define("t.Order", queuemax.TaskOptions{}, func(ctx context.Context, _ struct{}) error {
				r, err := queuemax.Step(ctx, "charge", func(context.Context) (receipt, error) { return receipt{"new", 1}, nil })
				if err != nil {
					return err
				}
				charged = append(charged, r)
				if err := queuemax.Do(ctx, "ship", func(context.Context) error { return nil }); err != nil {
					return err
				}
				return queuemax.Do(ctx, "email", func(context.Context) error { return nil })
			})
			cfg := queuemax.Config{Handlers: []queuemax.Handler{order}, Shards: 1}
			if backend == "PostgreSQL" {
				if pgStore == nil {
					t.Skip("the PostgreSQL store is not linked into this test binary (its module, queuemaxpg, runs these cases: go test -run TestOverlaid ./queuemaxpg)")
				}
				cfg.Store = pgStore(t)
				cfg.Shards = 0
			}
			c := queuemaxtest.NewClient(t, cfg)
			id, err := c.Enqueue(t.Context(), "t.Order", struct{}{}, queuemax.Opts{})
			if err != nil {
				t.Fatal(err)
			}
			passes(t, func(tb testing.TB) {
				queuemaxtest.SetStepsDone(tb, c, id, queuemaxtest.StepDone{Name: "charge", Result: receipt{"r-7", 1250}},
					queuemaxtest.StepDone{Name: "ship"})
			})
			var w queuemaxtest.Worked
			passes(t, func(tb testing.TB) { w = queuemaxtest.WorkOne(tb, c, id) })
			if w.Outcome != queuemax.OutcomeCompleted || len(charged) != 1 || charged[0] != (receipt{"r-7", 1250}) {
				t.Errorf("WorkOne = %s (%v), charge result %v; want completed with the recorded receipt", w.Outcome, w.Err, charged)
			}
			passes(t, func(tb testing.TB) { queuemaxtest.RequireStepsRan(tb, w, "email") })
			fails(t, func(tb testing.TB) { queuemaxtest.RequireStepsRan(tb, w, "ship", "email") },
				"ran steps [email], want [ship, email] (skipped as done: [charge, ship])")
			fails(t, func(tb testing.TB) {
				queuemaxtest.SetStepsDone(tb, c, id+1000, queuemaxtest.StepDone{Name: "charge"})
			}, "queuemaxtest.SetStepsDone", "job not found")
			id2, err := c.Enqueue(t.Context(), "t.Order", struct{}{}, queuemax.Opts{})
			if err != nil {
				t.Fatal(err)
			}
			fails(t, func(tb testing.TB) {
				queuemaxtest.SetStepsDone(tb, c, id2, queuemaxtest.StepDone{Name: "a"}, queuemaxtest.StepDone{Name: "a"})
			}, "duplicate job step name", `"a" given twice`)
		})
	}
}
