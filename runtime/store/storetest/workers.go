package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/store"
)

// testWorkerRegistry checks WorkerPut, WorkerList and WorkerDelete.
func testWorkerRegistry(t *testing.T, st store.Store) {
	ctx := t.Context()
	a := store.WorkerRecord{ID: "host-a:1", Info: json.RawMessage(`{"pid":1}`),
		StartedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(30 * time.Second)}
	b := store.WorkerRecord{ID: "host-b:2", Info: json.RawMessage(`{"pid":2}`),
		StartedAt: t0, UpdatedAt: t0, ExpiresAt: t0.Add(10 * time.Second)}
	for _, r := range []store.WorkerRecord{a, b} {
		if err := st.WorkerPut(ctx, r); err != nil {
			t.Fatalf("WorkerPut(%s): %v", r.ID, err)
		}
	}
	list := func(now time.Time) []store.WorkerRecord {
		t.Helper()
		got, err := st.WorkerList(ctx, now)
		if err != nil {
			t.Fatalf("WorkerList: %v", err)
		}
		return got
	}
	if diff := cmp.Diff([]store.WorkerRecord{a, b}, list(t0.Add(time.Second)), cmpJSON); diff != "" {
		t.Errorf("WorkerList (-want +got):\n%s", diff)
	}
	// b's entry lapses; a refresh keeps a's and replaces its info.
	a.Info = json.RawMessage(`{"pid":1,"busy":true}`)
	a.UpdatedAt = t0.Add(20 * time.Second)
	a.ExpiresAt = t0.Add(50 * time.Second)
	if err := st.WorkerPut(ctx, a); err != nil {
		t.Fatalf("WorkerPut refresh: %v", err)
	}
	if diff := cmp.Diff([]store.WorkerRecord{a}, list(t0.Add(40*time.Second)), cmpJSON); diff != "" {
		t.Errorf("WorkerList after refresh (-want +got):\n%s", diff)
	}
	if err := st.WorkerDelete(ctx, a.ID); err != nil {
		t.Fatalf("WorkerDelete: %v", err)
	}
	if err := st.WorkerDelete(ctx, "never-there"); err != nil {
		t.Errorf("WorkerDelete(unknown) = %v, want nil", err)
	}
	if got := list(t0); len(got) != 0 {
		t.Errorf("WorkerList after delete = %v, want none", got)
	}
}

// cmpJSON compares JSON documents by value, not by bytes (stores may
// normalise whitespace and key order, as PostgreSQL's jsonb does).
var cmpJSON = cmp.Comparer(func(x, y json.RawMessage) bool {
	var a, b any
	if json.Unmarshal(x, &a) != nil || json.Unmarshal(y, &b) != nil {
		return string(x) == string(y)
	}
	return cmp.Equal(a, b)
})
