package tasks_test

import (
	"testing"

	"github.com/queuemax/queuemax"
	"github.com/queuemax/queuemax/examples/tasks"
	"github.com/queuemax/queuemax/queuemaxtest"
)

// TestSendEmail_WithQueuemaxtest tests the generated SendEmail task the
// way the README's "Testing your tasks" shows: enqueue through the handle,
// assert the typed job, work it with the handler's dependencies.
func TestSendEmail_WithQueuemaxtest(t *testing.T) {
	t.Parallel()
	c := queuemaxtest.NewClient(t, queuemax.Config{Handlers: tasks.Handlers()})
	ts := tasks.New(c)
	if _, err := ts.SendEmail.Delay(t.Context(), "ada@example.com", "Welcome"); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.GenerateReport.Delay(t.Context(), 7, "2026-01"); err != nil {
		t.Fatal(err)
	}
	job := queuemaxtest.RequireEnqueued[tasks.SendEmailArgs](t, c, &queuemaxtest.RequireOpts{Priority: queuemax.Ptr(queuemax.PriorityHigh)})
	if job.Args != (tasks.SendEmailArgs{To: "ada@example.com", Subject: "Welcome"}) || job.Task != ts.SendEmail.Name() {
		t.Fatalf("RequireEnqueued = %s %+v, want ada's welcome", job.Task, job.Args)
	}
	outbox := &tasks.Outbox{}
	ctx := tasks.WithDeps(t.Context(), tasks.Deps{Mailer: outbox})
	if w := queuemaxtest.WorkOneWith(t, c, job.ID, &queuemaxtest.WorkOpts{Context: ctx}); w.Outcome != queuemax.OutcomeCompleted {
		t.Fatalf("SendEmail: %s: %v", w.Outcome, w.Err)
	}
	if msgs := outbox.Messages(); len(msgs) != 1 || msgs[0].To != "ada@example.com" {
		t.Errorf("outbox = %+v, want one message to ada", msgs)
	}
	queuemaxtest.RequireNotEnqueued[tasks.SendEmailArgs](t, c, nil)
	// The report job is still there; Drain runs it and returns its result.
	report := queuemaxtest.RequireEnqueued[tasks.GenerateReportArgs](t, c, nil)
	ws := queuemaxtest.DrainWith(t, c, &queuemaxtest.WorkOpts{Context: ctx})
	if len(ws) != 1 || ws[0].Job.ID != report.ID || ws[0].Outcome != queuemax.OutcomeCompleted {
		t.Fatalf("Drain = %+v, want the report job completed", ws)
	}
	if r, ok := ws[0].Result.(tasks.Report); !ok || r.UserID != 7 {
		t.Errorf("report result = %#v, want a tasks.Report for user 7", ws[0].Result)
	}
}
