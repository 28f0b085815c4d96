package pgstore_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queuemax/queuemax/queuemaxpg/pgstore"
	"github.com/queuemax/queuemax/runtime/store"
)

// TestMigrate18_UnannouncedEnds: a workflow end that a version-17 schema
// recorded but no process announced yet (workflows.announced false) is
// claimed once after the migration to wf_ends; an announced one is not.
func TestMigrate18_UnannouncedEnds(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	st := open(t, pgstore.Options{DSN: dsn})
	ctx := t.Context()
	now := time.Now()
	var wfs [2]int64
	for i := range wfs {
		id, _, err := st.InsertWorkflow(ctx, &store.WorkflowParams{Name: "w", Now: now,
			Steps: []store.WorkflowStepParams{{Name: "a", Job: job(now)}}})
		if err != nil {
			t.Fatal(err)
		}
		wfs[i] = id
	}
	jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 2, Now: now})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Claim = %d, %v", len(jobs), err)
	}
	for _, j := range jobs {
		if errs := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"}, Now: now}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	// Back to version 17: the ends as announced flags, the first one
	// announced already.
	s := func(table string) string { return pgx.Identifier{st.Schema(), table}.Sanitize() }
	for _, q := range []string{
		`DELETE FROM ` + s("wf_ends"),
		`ALTER TABLE ` + s("workflows") + ` ADD COLUMN announced boolean NOT NULL DEFAULT false`,
		`UPDATE ` + s("workflows") + ` SET announced = true WHERE id = ` + strconv.FormatInt(store.JobID(wfs[0]).Seq(), 10),
		`DELETE FROM ` + s("schema_version") + ` WHERE version >= 18`,
	} {
		if _, err := st.Pool().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	again, err := pgstore.Open(ctx, pgstore.Options{DSN: dsn, Schema: st.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	ends, err := again.ClaimWorkflowEnds(ctx, store.ClaimEndsParams{})
	if err != nil || len(ends) != 1 || ends[0].ID != wfs[1] || ends[0].Status != store.WorkflowCompleted {
		t.Fatalf("ClaimWorkflowEnds after the migration = %v, %v; want workflow %d completed", ends, err, wfs[1])
	}
	if ends, err := again.ClaimWorkflowEnds(ctx, store.ClaimEndsParams{}); err != nil || len(ends) != 0 {
		t.Fatalf("ClaimWorkflowEnds again = %v, %v; want nothing", ends, err)
	}
}
