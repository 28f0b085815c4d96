package engine

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// failingPut fails WorkerPut while err is set.
type failingPut struct {
	store.Store
	err error
}

func (s *failingPut) WorkerPut(ctx context.Context, w store.WorkerRecord) error {
	if s.err != nil {
		return s.err
	}
	return s.Store.WorkerPut(ctx, w)
}

// TestRegistry_FirstRefreshClose: RegisterFirst lists the process with
// the engine's description, the first RunOnce (the round at start) writes
// nothing more, the next one refreshes the entry, a failing write keeps
// the old entry, and Close removes it.
func TestRegistry_FirstRefreshClose(t *testing.T) {
	r := newRig(t, 1)
	now := r.now
	st := &failingPut{Store: r.st}
	reg := &Registry{Store: st, Key: "w1#1", Every: time.Second, TTL: time.Minute,
		Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler),
		Info: WorkerInfo{ID: "w1", Tasks: []string{"t"}}}
	r.cfg.Registry = reg
	r.engine()
	ctx := t.Context()
	list := func() []store.WorkerRecord {
		t.Helper()
		ws, err := r.st.WorkerList(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	reg.RegisterFirst(ctx)
	first := list()
	if len(first) != 1 {
		t.Fatalf("after RegisterFirst: entries %v; want 1", first)
	}
	var w WorkerInfo
	if err := json.Unmarshal(first[0].Info, &w); err != nil {
		t.Fatal(err)
	}
	if w.ID != "w1" || len(w.Tasks) != 1 || w.Concurrency != 4 || w.Breakers[""] != "closed" || !w.ExpiresAt.Equal(now.Add(time.Minute)) {
		t.Errorf("entry %+v; want w1 running t, concurrency 4, its closed breaker, expiring in a minute", w)
	}
	reg.RunOnce(ctx, now)
	now = now.Add(2 * time.Second)
	if got := list(); len(got) != 1 || !got[0].UpdatedAt.Equal(first[0].UpdatedAt) {
		t.Fatalf("the first RunOnce wrote %v; RegisterFirst's entry is that round's", got)
	}
	reg.RunOnce(ctx, now)
	if got := list(); len(got) != 1 || !got[0].UpdatedAt.Equal(now) {
		t.Fatalf("after a refresh: entries %v, want one updated at %v", got, now)
	}
	st.err = errors.New("boom")
	reg.RunOnce(ctx, now.Add(time.Second))
	if got := list(); len(got) != 1 {
		t.Fatalf("a failed refresh changed the entries: %v", got)
	}
	reg.Close(ctx)
	if got := list(); len(got) != 0 {
		t.Fatalf("after Close: entries %v, want none", got)
	}
}
