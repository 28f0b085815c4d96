package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// testOptions checks a job's own timeout and tags: stored by Insert (single
// and batch, over shards), returned by Job, Jobs and Claim, absent (zero,
// nil) on a job without them, and ListParams.Tag selecting exactly the jobs
// with that tag, with the other filters, on every shard or one; a deleted
// job leaves the tag filter.
func testOptions(t *testing.T, st store.Store) {
	ctx := t.Context()
	ins := func(ps ...store.InsertParams) []store.JobID {
		t.Helper()
		for i := range ps {
			ps[i].Payload, ps[i].MaxAttempts, ps[i].Now = json.RawMessage(`{}`), 1, t0
		}
		ids, err := st.Insert(ctx, ps)
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		return ids
	}
	a := ins(store.InsertParams{Shard: 0, Task: "t.A", Timeout: 1500 * time.Millisecond, Tags: []string{"billing", "eu"}})[0]
	batch := ins(
		store.InsertParams{Shard: 0, Task: "t.B", Tags: []string{"eu"}},
		store.InsertParams{Shard: 1, Task: "t.A", Tags: []string{"billing"}, Timeout: time.Hour},
		store.InsertParams{Shard: 1, Task: "t.A"},
	)
	b, c, plain := batch[0], batch[1], batch[2]

	type opt struct {
		Timeout time.Duration
		Tags    []string
	}
	want := map[store.JobID]opt{
		a:     {1500 * time.Millisecond, []string{"billing", "eu"}},
		b:     {0, []string{"eu"}},
		c:     {time.Hour, []string{"billing"}},
		plain: {},
	}
	check := func(where string, jobs []*store.Job) {
		t.Helper()
		got := map[store.JobID]opt{}
		for _, j := range jobs {
			got[j.ID] = opt{j.Timeout, j.Tags}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: timeout and tags (-want +got):\n%s", where, diff)
		}
	}
	var one []*store.Job
	for id := range want {
		j, err := st.Job(ctx, id)
		if err != nil {
			t.Fatalf("Job(%d): %v", id, err)
		}
		one = append(one, j)
	}
	check("Job", one)
	all, err := st.Jobs(ctx, store.ListParams{Shard: store.AllShards})
	if err != nil {
		t.Fatalf("Jobs: %v", err)
	}
	check("Jobs", all)

	filter := func(p store.ListParams) []store.JobID {
		t.Helper()
		jobs, err := st.Jobs(ctx, p)
		if err != nil {
			t.Fatalf("Jobs(%+v): %v", p, err)
		}
		ids := idsOf(jobs)
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...store.JobID) []store.JobID { slices.Sort(ids); return ids }
	for _, tc := range []struct {
		p    store.ListParams
		want []store.JobID
	}{
		{store.ListParams{Shard: store.AllShards, Tag: "billing"}, sorted(a, c)},
		{store.ListParams{Shard: store.AllShards, Tag: "eu"}, sorted(a, b)},
		{store.ListParams{Shard: store.AllShards, Tag: "bill"}, nil},
		{store.ListParams{Shard: 1, Tag: "billing"}, sorted(c)},
		{store.ListParams{Shard: store.AllShards, Tag: "eu", Task: "t.B"}, sorted(b)},
		{store.ListParams{Shard: store.AllShards, Tag: "billing", Status: store.StatusProcessing}, nil},
		{store.ListParams{Shard: store.AllShards, Tag: "billing", Limit: 1}, nil}, // one of a, c: checked below
	} {
		got := filter(tc.p)
		if tc.p.Limit == 1 {
			if len(got) != 1 || (got[0] != a && got[0] != c) {
				t.Errorf("Jobs(%+v) = %v, want one of %v", tc.p, got, []store.JobID{a, c})
			}
			continue
		}
		if len(got) == 0 {
			got = nil
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Jobs(%+v) (-want +got):\n%s", tc.p, diff)
		}
	}

	claimed, err := st.Claim(ctx, store.ClaimParams{WorkerID: "w1", Max: 10, Now: t0})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	check("Claim", claimed)

	// Completing c without Keep deletes it: it leaves the tag filter.
	for _, j := range claimed {
		if j.ID == c {
			if err := st.Complete(ctx, []store.CompleteParams{{Lease: store.Lease{ID: j.ID, Token: j.Lease, WorkerID: "w1"}, Now: t0}})[0]; err != nil {
				t.Fatalf("Complete: %v", err)
			}
		}
	}
	if got := filter(store.ListParams{Shard: store.AllShards, Tag: "billing"}); !slices.Equal(got, []store.JobID{a}) {
		t.Errorf("after deleting job %d: Jobs(tag billing) = %v, want [%d]", c, got, a)
	}
}
