package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// FillWorkflows inserts n/2 two-step workflows (a → b) of no-op jobs, so
// that draining n jobs completes every step: each a releases its b, each
// b ends its workflow.
func FillWorkflows(b *testing.B, st store.Store, n int) {
	b.Helper()
	ws := st
	now := time.Now()
	for i := 0; i < n; i += 2 {
		p := &store.WorkflowParams{Name: "bench", Now: now, Steps: []store.WorkflowStepParams{
			{Name: "a", Job: Job(now)},
			{Name: "b", Job: Job(now), After: []string{"a"}},
		}}
		if _, _, err := ws.InsertWorkflow(b.Context(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// WorkflowComplete drains two-step workflows as ClaimComplete drains
// plain jobs (claim 100, one Complete call), and reads the workflows the
// batch finished with FinishedBy, as the engine does for the end events.
func (h Bench) WorkflowComplete(b *testing.B) { h.workflowComplete(b, true) }

// WorkflowCompleteNoEvents is WorkflowComplete without the FinishedBy
// read: the cost of the release alone.
func (h Bench) WorkflowCompleteNoEvents(b *testing.B) { h.workflowComplete(b, false) }

func (h Bench) workflowComplete(b *testing.B, events bool) {
	st := h.Open(b)
	n := b.N + b.N%2
	FillWorkflows(b, st, n)
	ws := st
	ctx := b.Context()
	acks := make([]store.CompleteParams, 0, 100)
	ids := make([]store.JobID, 0, 100)
	ended := 0
	b.ResetTimer()
	defer ReportCPU(b, CPUTime())
	if h.Server != nil {
		defer h.Server(b, st)()
	}
	for done := 0; done < n; {
		jobs, err := st.Claim(ctx, h.claimParams(100))
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v (after %d of %d)", len(jobs), err, done, n)
		}
		acks, ids = acks[:0], ids[:0]
		for _, j := range jobs {
			acks = append(acks, store.CompleteParams{Lease: benchLease(j), Now: time.Now()})
			ids = append(ids, j.ID)
		}
		mustAll(b, st.Complete(ctx, acks))
		if events {
			got, err := ws.FinishedBy(ctx, ids)
			if err != nil {
				b.Fatal(err)
			}
			ended += len(got)
		}
		done += len(jobs)
	}
	b.StopTimer()
	if events && ended != n/2 {
		b.Fatalf("FinishedBy reported %d workflows, want %d", ended, n/2)
	}
}

// WorkflowCompleteOne acknowledges each step in its own Complete call
// followed by its FinishedBy (the manual Client API).
func (h Bench) WorkflowCompleteOne(b *testing.B) { h.workflowCompleteOne(b, true) }

// WorkflowCompleteOneNoEvents is WorkflowCompleteOne without FinishedBy.
func (h Bench) WorkflowCompleteOneNoEvents(b *testing.B) { h.workflowCompleteOne(b, false) }

func (h Bench) workflowCompleteOne(b *testing.B, events bool) {
	st := h.Open(b)
	n := b.N + b.N%2
	FillWorkflows(b, st, n)
	ws := st
	ctx := b.Context()
	b.ResetTimer()
	defer ReportCPU(b, CPUTime())
	if h.Server != nil {
		defer h.Server(b, st)()
	}
	for done := 0; done < n; {
		jobs, err := st.Claim(ctx, h.claimParams(100))
		if err != nil || len(jobs) == 0 {
			b.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		for _, j := range jobs {
			mustAll(b, st.Complete(ctx, []store.CompleteParams{{Lease: benchLease(j), Now: time.Now()}}))
			if !events {
				continue
			}
			if _, err := ws.FinishedBy(ctx, []store.JobID{j.ID}); err != nil {
				b.Fatal(err)
			}
		}
		done += len(jobs)
	}
}

// WorkflowInsert enqueues workflows of 10 independent steps (b.N counts
// jobs), to compare with InsertBatch-like calls of 10 jobs (Insert10).
func (h Bench) WorkflowInsert(b *testing.B) {
	st := h.Open(b)
	ws := st
	ctx := b.Context()
	defer ReportCPU(b, CPUTime())
	for done := 0; done < b.N; done += 10 {
		now := time.Now()
		p := &store.WorkflowParams{Name: "bench", Now: now}
		for i := range 10 {
			j := Job(now)
			j.Payload = json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`)
			p.Steps = append(p.Steps, store.WorkflowStepParams{Name: "s" + string(rune('0'+i)), Job: j})
		}
		if _, _, err := ws.InsertWorkflow(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// Insert10 enqueues 10 jobs per Insert call (WorkflowInsert's baseline).
func (h Bench) Insert10(b *testing.B) {
	st := h.Open(b)
	ctx := b.Context()
	defer ReportCPU(b, CPUTime())
	for done := 0; done < b.N; done += 10 {
		now := time.Now()
		batch := make([]store.InsertParams, 10)
		for i := range batch {
			batch[i] = Job(now)
			batch[i].Payload = json.RawMessage(`{"n":` + string(rune('0'+i)) + `}`)
		}
		if _, err := st.Insert(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}
