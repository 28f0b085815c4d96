package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// testProgressArea runs the Progress area: job steps' progress written
// under the job's lease, read back in order, refused to a lost lease, kept
// across snoozes, retries and requeues from the dead-letter queue (or
// cleared), and pruned with its job.
func testProgressArea(t *testing.T, s *suite) {
	t.Run("WriteReadBack", func(t *testing.T) { t.Parallel(); testProgressWriteRead(t, s.setup(t, 2)) })
	t.Run("FencedByLease", func(t *testing.T) { t.Parallel(); testProgressFenced(t, s.setup(t, 1)) })
	t.Run("KeptAcrossRetriesAndRequeues", func(t *testing.T) { t.Parallel(); testProgressKept(t, s.setup(t, 1)) })
	t.Run("Reset", func(t *testing.T) { t.Parallel(); testProgressReset(t, s.setup(t, 1)) })
	t.Run("PrunedWithJob", func(t *testing.T) { t.Parallel(); testProgressPruned(t, s.setup(t, 1)) })
	t.Run("ConcurrentWrites", func(t *testing.T) { t.Parallel(); testProgressConcurrent(t, s.setup(t, 1)) })
}

// testProgressConcurrent: concurrent writes of several jobs' steps (which
// a store may group into one statement) each land, or fail alone when
// their lease does not hold.
func testProgressConcurrent(t *testing.T, b *testBundle) {
	insert(t, b, store.InsertParams{Task: "t.S"}, store.InsertParams{Task: "t.S"})
	jobs := claim(t, b, 2, t0)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(jobs))
	}
	const per = 16
	stale := pLease(jobs[0])
	stale.Token++
	var wg sync.WaitGroup
	errs := make(chan error, 2*per)
	for _, j := range jobs {
		for i := range per {
			wg.Go(func() {
				errs <- setStep(b, pLease(j), i+1, store.JobStep{Name: fmt.Sprintf("s%02d", i), Done: true, Result: json.RawMessage(strconv.Itoa(i))})
			})
		}
	}
	staleErrs := make(chan error, per)
	for i := range per {
		wg.Go(func() {
			staleErrs <- setStep(b, stale, 99, store.JobStep{Name: fmt.Sprintf("stale%02d", i), Done: true})
		})
	}
	wg.Wait()
	close(errs)
	close(staleErrs)
	for err := range errs {
		if err != nil {
			t.Errorf("SetProgress: %v", err)
		}
	}
	for err := range staleErrs {
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("SetProgress(stale lease) error = %v, want ErrLeaseLost", err)
		}
	}
	for _, j := range jobs {
		var want []store.JobStep
		for i := range per {
			want = append(want, store.JobStep{Name: fmt.Sprintf("s%02d", i), Done: true, Result: json.RawMessage(strconv.Itoa(i))})
		}
		wantSteps(t, b, j.ID, want)
	}
}

// stepsCmp compares recorded steps by meaning: JSON values decoded (a
// store may re-space them or reorder an object's keys), times ignored.
var stepsCmp = cmp.Options{
	cmpopts.IgnoreFields(store.JobStep{}, "UpdatedAt"),
	cmp.Comparer(func(a, b json.RawMessage) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		var va, vb any
		da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
		da.UseNumber()
		db.UseNumber()
		if da.Decode(&va) != nil || db.Decode(&vb) != nil {
			return bytes.Equal(a, b)
		}
		return cmp.Equal(va, vb)
	}),
}

func setStep(b *testBundle, l store.Lease, seq int, s store.JobStep) error {
	return b.st.SetProgress(b.ctx, store.ProgressParams{Lease: l, Step: s, Seq: seq, Now: t0})
}

func wantSteps(t *testing.T, b *testBundle, id store.JobID, want []store.JobStep) {
	t.Helper()
	got, err := b.st.Progress(b.ctx, id)
	if err != nil {
		t.Fatalf("Progress(%d): %v", id, err)
	}
	if len(want) == 0 && len(got) == 0 {
		got = want
	}
	if diff := cmp.Diff(want, got, stepsCmp); diff != "" {
		t.Errorf("Progress(%d) mismatch (-want +got):\n%s", id, diff)
	}
	j, err := b.st.Job(b.ctx, id)
	if err != nil {
		t.Fatalf("Job(%d): %v", id, err)
	}
	if len(want) == 0 && len(j.Steps) == 0 {
		j.Steps = want
	}
	if diff := cmp.Diff(want, j.Steps, stepsCmp); diff != "" {
		t.Errorf("Job(%d).Steps mismatch (-want +got):\n%s", id, diff)
	}
}

func testProgressWriteRead(t *testing.T, b *testBundle) {
	in := insert(t, b, store.InsertParams{Shard: 1, Task: "t.S"}, store.InsertParams{Shard: 0, Task: "t.S"})
	jobs := claim(t, b, 2, t0)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(jobs))
	}
	j := jobs[0]
	if j.ID != in[0] {
		j = jobs[1]
	}
	wantSteps(t, b, j.ID, nil)
	big := `{"s":"quote \" and \\ and ünïcode","n":12345678901234567890,"f":1.5,"nil":null,"a":[1,{"b":false}]}`
	steps := []store.JobStep{
		{Name: "charge", Done: true, Result: json.RawMessage(big)},
		{Name: "étape 2: ship/eu.west", Done: true, Result: json.RawMessage(`null`)},
		{Name: "import", Cursor: json.RawMessage(`{"row":120}`)},
	}
	for i, s := range steps {
		if err := setStep(b, pLease(j), i+1, s); err != nil {
			t.Fatalf("SetProgress(%q): %v", s.Name, err)
		}
	}
	// A later write of a step replaces its entry and keeps its place.
	steps[2].Cursor = json.RawMessage(`{"row":240}`)
	if err := setStep(b, pLease(j), 3, steps[2]); err != nil {
		t.Fatalf("SetProgress(import again): %v", err)
	}
	wantSteps(t, b, j.ID, steps)
	// The other job (another shard) has none.
	wantSteps(t, b, in[1], nil)
	if _, err := b.st.Progress(b.ctx, store.NewJobID(0, 999999)); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("Progress(unknown job) error = %v, want ErrJobNotFound", err)
	}
	for _, name := range []string{"", `a"b`, `a\b`, "a\nb", string(make([]byte, queuemaxtype.MaxStepName+1))} {
		if err := setStep(b, pLease(j), 9, store.JobStep{Name: name, Done: true}); !errors.Is(err, queuemaxtype.ErrInvalidStepName) {
			t.Errorf("SetProgress(name %q) error = %v, want ErrInvalidStepName", name, err)
		}
	}
	wantSteps(t, b, j.ID, steps)
}

func testProgressFenced(t *testing.T, b *testBundle) {
	in := insert(t, b, store.InsertParams{Task: "t.S"})
	// Not processing: nobody holds a lease.
	if err := setStep(b, store.Lease{ID: in[0], Token: 1}, 1, store.JobStep{Name: "a", Done: true}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("SetProgress(pending job) error = %v, want ErrLeaseLost", err)
	}
	old := claim(t, b, 1, t0)[0]
	if err := setStep(b, pLease(old), 1, store.JobStep{Name: "a", Cursor: json.RawMessage(`1`)}); err != nil {
		t.Fatalf("SetProgress(holder): %v", err)
	}
	wrong := pLease(old)
	wrong.Token++
	if err := setStep(b, wrong, 1, store.JobStep{Name: "a", Cursor: json.RawMessage(`99`)}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("SetProgress(wrong token) error = %v, want ErrLeaseLost", err)
	}
	// The holder stops heartbeating; recovery hands the job to another
	// worker, which records its own progress. The old holder cannot
	// overwrite it.
	if _, err := b.st.RecoverOrphans(b.ctx, t0.Add(time.Minute), t0.Add(time.Minute)); err != nil {
		t.Fatalf("RecoverOrphans: %v", err)
	}
	jobs, err := b.st.Claim(b.ctx, store.ClaimParams{WorkerID: "w2", Max: 1, Now: t0.Add(2 * time.Minute)})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("Claim(w2) = %v, %v; want the recovered job", jobs, err)
	}
	cur := jobs[0]
	if err := setStep(b, pLease(cur), 1, store.JobStep{Name: "a", Cursor: json.RawMessage(`2`)}); err != nil {
		t.Fatalf("SetProgress(new holder): %v", err)
	}
	for _, s := range []store.JobStep{{Name: "a", Done: true, Result: json.RawMessage(`"stale"`)}, {Name: "b", Done: true}} {
		if err := setStep(b, pLease(old), 1, s); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("SetProgress(old holder, %q) error = %v, want ErrLeaseLost", s.Name, err)
		}
	}
	wantSteps(t, b, in[0], []store.JobStep{{Name: "a", Cursor: json.RawMessage(`2`)}})
}

func testProgressKept(t *testing.T, b *testBundle) {
	in := insert(t, b, store.InsertParams{Task: "t.S", MaxAttempts: 9})
	now := t0
	run := func(step string, f store.FailParams) {
		t.Helper()
		j := claim(t, b, 1, now)
		if len(j) != 1 {
			t.Fatalf("claim before step %q: got %d jobs, want 1", step, len(j))
		}
		if step != "" {
			if err := setStep(b, pLease(j[0]), 0, store.JobStep{Name: step, Done: true, Result: json.RawMessage(`"` + step + `"`)}); err != nil {
				t.Fatalf("SetProgress(%q): %v", step, err)
			}
		}
		f.Lease, f.Now, f.Error, f.ErrorType = pLease(j[0]), now, "x", "x"
		if f.RetryAt.IsZero() {
			f.RetryAt = now
		}
		if err := b.st.Fail(b.ctx, []store.FailParams{f})[0]; err != nil {
			t.Fatalf("Fail(%+v): %v", f, err)
		}
		now = now.Add(time.Minute)
	}
	done := func(names ...string) []store.JobStep {
		var out []store.JobStep
		for _, n := range names {
			out = append(out, store.JobStep{Name: n, Done: true, Result: json.RawMessage(`"` + n + `"`)})
		}
		return out
	}
	run("a", store.FailParams{Snooze: true})
	wantSteps(t, b, in[0], done("a"))
	run("b", store.FailParams{})
	wantSteps(t, b, in[0], done("a", "b"))
	run("c", store.FailParams{Dead: true})
	wantSteps(t, b, in[0], done("a", "b", "c"))
	if err := b.st.RetryJob(b.ctx, in[0], now); err != nil {
		t.Fatalf("RetryJob: %v", err)
	}
	wantSteps(t, b, in[0], done("a", "b", "c"))
	requeue := func(clear bool) {
		t.Helper()
		dl, err := b.st.DeadLetters(b.ctx, store.ListParams{Shard: store.AllShards})
		if err != nil || len(dl) != 1 {
			t.Fatalf("DeadLetters = %v, %v; want one", dl, err)
		}
		id, err := b.st.RequeueDead(b.ctx, dl[0].Shard, dl[0].ID, store.RequeueParams{Now: now, ClearProgress: clear,
			Fallback: store.TaskDefaults{Priority: store.PriorityMedium, MaxAttempts: 3}})
		if err != nil || id != in[0] {
			t.Fatalf("RequeueDead = %d, %v; want job %d", id, err, in[0])
		}
	}
	run("", store.FailParams{Dead: true})
	requeue(false)
	wantSteps(t, b, in[0], done("a", "b", "c"))
	run("", store.FailParams{Dead: true})
	requeue(true)
	wantSteps(t, b, in[0], nil)
}

func testProgressReset(t *testing.T, b *testBundle) {
	in := insert(t, b, store.InsertParams{Task: "t.S"})
	seed := []store.JobStep{{Name: "a", Done: true, Result: json.RawMessage(`{"x":1}`)}, {Name: "b", Done: true, Result: json.RawMessage(`null`)},
		{Name: "c", Cursor: json.RawMessage(`7`)}}
	if err := b.st.ResetProgress(b.ctx, in[0], seed, t0); err != nil {
		t.Fatalf("ResetProgress(pending job): %v", err)
	}
	wantSteps(t, b, in[0], seed)
	dup := []store.JobStep{{Name: "a", Done: true}, {Name: "a"}}
	if err := b.st.ResetProgress(b.ctx, in[0], dup, t0); !errors.Is(err, queuemaxtype.ErrDuplicateStep) {
		t.Errorf("ResetProgress(duplicate names) error = %v, want ErrDuplicateStep", err)
	}
	j := claim(t, b, 1, t0)[0]
	if err := b.st.ResetProgress(b.ctx, in[0], nil, t0); !errors.Is(err, store.ErrJobProcessing) {
		t.Errorf("ResetProgress(processing job) error = %v, want ErrJobProcessing", err)
	}
	wantSteps(t, b, in[0], seed)
	// The holder continues after the seeded steps, keeping their order.
	if err := setStep(b, pLease(j), 4, store.JobStep{Name: "d", Done: true, Result: json.RawMessage(`4`)}); err != nil {
		t.Fatalf("SetProgress: %v", err)
	}
	if err := b.st.Release(b.ctx, []store.Lease{pLease(j)})[0]; err != nil {
		t.Fatalf("Release: %v", err)
	}
	wantSteps(t, b, in[0], append(seed[:3:3], store.JobStep{Name: "d", Done: true, Result: json.RawMessage(`4`)}))
	if err := b.st.ResetProgress(b.ctx, in[0], nil, t0); err != nil {
		t.Fatalf("ResetProgress(nil): %v", err)
	}
	wantSteps(t, b, in[0], nil)
	if err := b.st.ResetProgress(b.ctx, store.NewJobID(0, 999999), nil, t0); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("ResetProgress(unknown job) error = %v, want ErrJobNotFound", err)
	}
}

func testProgressPruned(t *testing.T, b *testBundle) {
	in := insert(t, b, store.InsertParams{Task: "t.S"}, store.InsertParams{Task: "t.S"})
	jobs := claim(t, b, 2, t0)
	for _, j := range jobs {
		if err := setStep(b, pLease(j), 1, store.JobStep{Name: "a", Done: true}); err != nil {
			t.Fatalf("SetProgress: %v", err)
		}
	}
	// One completion deletes its row, the other keeps it until pruned.
	errs := b.st.Complete(b.ctx, []store.CompleteParams{{Lease: pLease(jobs[0]), Now: t0}, {Lease: pLease(jobs[1]), Keep: true, Now: t0}})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Complete[%d]: %v", i, err)
		}
	}
	if _, err := b.st.Progress(b.ctx, jobs[0].ID); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("Progress(deleted job) error = %v, want ErrJobNotFound", err)
	}
	wantSteps(t, b, jobs[1].ID, []store.JobStep{{Name: "a", Done: true, Result: json.RawMessage(`null`)}})
	if _, err := b.st.Prune(b.ctx, store.PruneParams{CompletedBefore: t0.Add(time.Hour)}); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if _, err := b.st.Progress(b.ctx, jobs[1].ID); !errors.Is(err, store.ErrJobNotFound) {
		t.Errorf("Progress(pruned job) error = %v, want ErrJobNotFound", err)
	}
	_ = in
}

// pLease is j's lease, with its worker.
func pLease(j *store.Job) store.Lease {
	return store.Lease{ID: j.ID, Token: j.Lease, WorkerID: j.WorkerID}
}
