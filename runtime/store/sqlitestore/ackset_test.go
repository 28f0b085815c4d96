package sqlitestore_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// The set-based acknowledgements of a batch must leave exactly what the
// per-item statements leave: the same rows, byte for byte (texts with
// quotes, newlines, NUL and invalid UTF-8 included), the same dead letters
// and counters.
func TestBatchAcksMatchSingleAcks(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	texts := []string{"", "plain", `quo"te \ back`, "new\nline\ttab", "nul\x00byte", "bad \xff\xfe utf8", "ünï €"}
	type outcome struct {
		Jobs    []*store.Job
		Dead    []*store.DeadLetter
		Stats   []store.ShardStats
		Results []error
	}
	run := func(batched bool) outcome {
		st := openStore(t, sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
		ctx := t.Context()
		const n = 28
		params := make([]store.InsertParams, n)
		for i := range params {
			params[i] = store.InsertParams{Task: "t", Payload: json.RawMessage(`{"i":1}`), MaxAttempts: 3,
				Metadata: json.RawMessage(`{"m":1}`), Now: t0}
		}
		ids, err := st.Insert(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: n, Now: t0})
		if err != nil || len(jobs) != n {
			t.Fatalf("Claim = %d, %v", len(jobs), err)
		}
		if _, err := st.Cancel(ctx, jobs[3].ID, t0); err != nil { // a cancel request on a running job
			t.Fatal(err)
		}
		var fails []store.FailParams
		var acks []store.CompleteParams
		for i, j := range jobs {
			l := store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"}
			txt := texts[i%len(texts)]
			switch i % 7 {
			case 0:
				fails = append(fails, store.FailParams{Lease: l, Error: txt, ErrorType: txt, Stack: txt, Dead: true, Now: t0.Add(time.Second)})
			case 1:
				fails = append(fails, store.FailParams{Lease: l, Error: txt, ErrorType: "E", Stack: txt, RetryAt: t0.Add(time.Minute), Now: t0.Add(time.Second)})
			case 2:
				fails = append(fails, store.FailParams{Lease: l, Error: txt, ErrorType: "E", RetryAt: t0, Now: t0})
			case 3:
				fails = append(fails, store.FailParams{Lease: l, Error: txt, ErrorType: "E", Stack: txt, Cancelled: true, Now: t0.Add(2 * time.Second)})
			case 4:
				fails = append(fails, store.FailParams{Lease: l, Snooze: true, RetryAt: t0.Add(time.Hour), Now: t0})
			case 5:
				acks = append(acks, store.CompleteParams{Lease: l, Keep: i%2 == 1, Now: t0})
			case 6:
				acks = append(acks, store.CompleteParams{Lease: l, Result: json.RawMessage(`{"r":"` + txt[:min(len(txt), 2)] + `"}`), Now: t0.Add(3 * time.Second)})
			}
			if i == 10 { // a stale token in the middle
				fails = append(fails, store.FailParams{Lease: store.Lease{ID: j.ID, Token: j.Lease + 1}, Dead: true, Error: "x", ErrorType: "x", Now: t0})
			}
		}
		var o outcome
		if batched {
			o.Results = append(st.Fail(ctx, fails), st.Complete(ctx, acks)...)
		} else {
			for _, f := range fails {
				o.Results = append(o.Results, st.Fail(ctx, []store.FailParams{f})[0])
			}
			for _, a := range acks {
				o.Results = append(o.Results, st.Complete(ctx, []store.CompleteParams{a})[0])
			}
		}
		for _, id := range ids {
			if j, err := st.Job(ctx, id); err == nil {
				o.Jobs = append(o.Jobs, j)
			}
		}
		if o.Dead, err = st.DeadLetters(ctx, store.ListParams{Shard: store.AllShards, Limit: 1000}); err != nil {
			t.Fatal(err)
		}
		if o.Stats, err = st.Stats(ctx); err != nil {
			t.Fatal(err)
		}
		// Leases are random per claim, and a claim stamps its start with
		// the time it took: compare everything else.
		for _, j := range o.Jobs {
			j.Lease, j.StartedAt, j.Heartbeat = 0, time.Time{}, time.Time{}
		}
		return o
	}
	single, batched := run(false), run(true)
	if diff := cmp.Diff(single, batched, cmpErrors); diff != "" {
		t.Errorf("batched acknowledgements differ from single ones (-single +batched):\n%s", diff)
	}
	if len(single.Dead) != 4 {
		t.Errorf("%d dead letters, want 4", len(single.Dead))
	}
}

var cmpErrors = cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) || errors.Is(b, a) })

// A batch may name one job twice: a stale lease (the job was recovered
// and claimed again) and the current one. Whatever their order, the
// current lease completes the job and every other item loses, as the
// per-item statements decide it.
func TestBatchCompleteSameJobTwice(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		keep bool
		// order of the items: 's' stale lease of job A, 'a' current lease
		// of job A, 'b' current lease of job B
		order string
		want  []error
	}{
		{"StaleFirst", false, "sab", []error{store.ErrLeaseLost, nil, nil}},
		{"StaleLast", false, "asb", []error{nil, store.ErrLeaseLost, nil}},
		{"Twice", false, "aab", []error{nil, store.ErrLeaseLost, nil}},
		{"StaleFirstKept", true, "sab", []error{store.ErrLeaseLost, nil, nil}},
		{"TwiceKept", true, "baa", []error{nil, nil, store.ErrLeaseLost}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t, sqlitestore.Options{Dir: t.TempDir(), Shards: 1})
			ctx := t.Context()
			if _, err := st.Insert(ctx, []store.InsertParams{
				{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: t0},
				{Task: "t", Payload: json.RawMessage(`{}`), MaxAttempts: 3, Now: t0},
			}); err != nil {
				t.Fatal(err)
			}
			jobs, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 1, Now: t0})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("Claim = %d, %v", len(jobs), err)
			}
			stale := jobs[0]
			// The worker stops heartbeating; recovery gives the job back
			// and the same worker claims it again under a new lease.
			if _, err := st.RecoverOrphans(ctx, t0.Add(time.Hour), t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			jobs, err = st.Claim(ctx, store.ClaimParams{WorkerID: "w", Max: 2, Now: t0.Add(time.Hour)})
			if err != nil || len(jobs) != 2 {
				t.Fatalf("Claim = %d, %v", len(jobs), err)
			}
			byID := map[store.JobID]*store.Job{jobs[0].ID: jobs[0], jobs[1].ID: jobs[1]}
			a, b := byID[stale.ID], jobs[0]
			if b.ID == stale.ID {
				b = jobs[1]
			}
			if a == nil || a.Lease == stale.Lease {
				t.Fatalf("job %d was not claimed again under a new lease", stale.ID)
			}
			var acks []store.CompleteParams
			for _, c := range tt.order {
				j := map[rune]*store.Job{'s': stale, 'a': a, 'b': b}[c]
				acks = append(acks, store.CompleteParams{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w"},
					Keep: tt.keep, Now: t0.Add(time.Hour)})
			}
			got := st.Complete(ctx, acks)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("Complete errors (-want +got):\n%s", diff)
			}
			s, err := st.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantKept := int64(0)
			if tt.keep {
				wantKept = 2
			}
			if s[0].Processing != 0 || s[0].TotalProcessed != 2 || s[0].Completed != wantKept {
				t.Errorf("Stats = %+v, want 0 processing, 2 processed, %d kept", s[0], wantKept)
			}
		})
	}
}
