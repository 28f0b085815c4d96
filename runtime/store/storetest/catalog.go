package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// testCatalogArea runs the Catalog area: the task catalogue keeps what was
// put (replacing by name), and TaskRename renames only waiting jobs.
func testCatalogArea(t *testing.T, s *suite) {
	t.Run("PutReplacesByName", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		if recs, err := b.st.TaskCatalog(b.ctx); err != nil || len(recs) != 0 {
			t.Fatalf("TaskCatalog of a new store = %v, %v; want none", recs, err)
		}
		put := func(recs ...store.TaskRecord) {
			t.Helper()
			if err := b.st.TaskCatalogPut(b.ctx, recs); err != nil {
				t.Fatalf("TaskCatalogPut: %v", err)
			}
		}
		put(store.TaskRecord{Name: "tasks.B", Info: json.RawMessage(`{"v":1}`), UpdatedAt: t0},
			store.TaskRecord{Name: "tasks.A", Info: json.RawMessage(`{"v":1}`), UpdatedAt: t0})
		put(store.TaskRecord{Name: "tasks.B", Info: json.RawMessage(`{"v":2}`), UpdatedAt: t0.Add(time.Minute)})
		recs, err := b.st.TaskCatalog(b.ctx)
		if err != nil || len(recs) != 2 {
			t.Fatalf("TaskCatalog = %v, %v; want two records", recs, err)
		}
		var v struct{ V int }
		if recs[0].Name != "tasks.A" || recs[1].Name != "tasks.B" || json.Unmarshal(recs[1].Info, &v) != nil || v.V != 2 ||
			!recs[1].UpdatedAt.Equal(t0.Add(time.Minute)) || !recs[0].UpdatedAt.Equal(t0) {
			t.Errorf("TaskCatalog = %+v; want tasks.A then tasks.B replaced by v 2 at t0+1m", recs)
		}
		if err := b.st.TaskCatalogPut(b.ctx, []store.TaskRecord{{Name: "tasks.C", Info: json.RawMessage(`{`)}}); err == nil {
			t.Error("TaskCatalogPut with invalid JSON: no error")
		}
		if err := b.st.TaskCatalogPut(b.ctx, []store.TaskRecord{{Name: "", Info: json.RawMessage(`{}`)}}); err == nil {
			t.Error("TaskCatalogPut with an empty name: no error")
		}
	})

	t.Run("RenameMovesWaitingJobsOnly", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, 2)
		old, other := "example.com/shop/tasks.Send", "tasks.Other"
		first := insert(t, b, store.InsertParams{Shard: 0, Task: old}) // claimed below: processing
		running := claim(t, b, 1, t0)
		if len(running) != 1 || running[0].ID != first[0] {
			t.Fatalf("claim = %v, want job %d", running, first[0])
		}
		ids := insert(t, b,
			store.InsertParams{Shard: 0, Task: old},
			store.InsertParams{Shard: 1, Task: old},
			store.InsertParams{Shard: 1, Task: old, RunAt: t0.Add(time.Hour)}, // scheduled
			store.InsertParams{Shard: 0, Task: other},
		)
		ids = append(ids, first[0])
		n, err := b.st.TaskRename(b.ctx, old, "tasks.Send")
		if err != nil || n != 3 {
			t.Fatalf("TaskRename = %d, %v; want 3 waiting jobs renamed", n, err)
		}
		want := map[store.JobID]string{ids[0]: "tasks.Send", ids[1]: "tasks.Send", ids[2]: "tasks.Send", ids[3]: other, ids[4]: old}
		for id, task := range want {
			j, err := b.st.Job(b.ctx, id)
			if err != nil || j.Task != task {
				t.Errorf("job %d after the rename: %+v, %v; want task %s", id, j, err, task)
			}
		}
		if j, _ := b.st.Job(b.ctx, ids[2]); j != nil && j.Status != store.StatusScheduled {
			t.Errorf("scheduled job after the rename: status %s", j.Status)
		}
		if n, err := b.st.TaskRename(b.ctx, old, "tasks.Send"); err != nil || n != 0 {
			t.Errorf("second TaskRename = %d, %v; want 0 (the running job keeps its name)", n, err)
		}
		if _, err := b.st.TaskRename(b.ctx, old, old); err == nil {
			t.Error("TaskRename to the same name: no error")
		}
	})
}
