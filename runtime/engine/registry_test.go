package engine

import (
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// TestRegistry_FirstRefreshClose: RegisterFirst lists the process, the
// first RunOnce (the round at start) writes nothing more, the next one
// refreshes the entry, a failing Describe keeps the old entry, and Close
// removes it.
func TestRegistry_FirstRefreshClose(t *testing.T) {
	r := newRig(t, 1)
	now := r.now
	calls := 0
	var fail error
	reg := &Registry{Store: r.st, Key: "w1#1", Every: time.Second, TTL: time.Minute,
		Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler),
		Describe: func(at, expires time.Time) (json.RawMessage, time.Time, error) {
			calls++
			if fail != nil {
				return nil, time.Time{}, fail
			}
			b, _ := json.Marshal(map[string]any{"at": at.Unix(), "expires": expires.Unix()})
			return b, r.now, nil
		}}
	ctx := t.Context()
	list := func() []string {
		t.Helper()
		ws, err := r.st.WorkerList(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range ws {
			out = append(out, w.ID+" "+string(w.Info))
		}
		return out
	}
	reg.RegisterFirst(ctx)
	first := list()
	if len(first) != 1 || calls != 1 {
		t.Fatalf("after RegisterFirst: entries %q, Describe calls %d; want 1 and 1", first, calls)
	}
	reg.RunOnce(ctx, now)
	if calls != 1 {
		t.Fatalf("the first RunOnce called Describe (%d calls); RegisterFirst's entry is that round's", calls)
	}
	now = now.Add(2 * time.Second)
	reg.RunOnce(ctx, now)
	if got := list(); calls != 2 || len(got) != 1 || got[0] == first[0] {
		t.Fatalf("after a refresh: entries %q (before %q), calls %d", got, first, calls)
	}
	fail = errors.New("boom")
	reg.RunOnce(ctx, now)
	if got := list(); len(got) != 1 {
		t.Fatalf("a failed refresh changed the entries: %q", got)
	}
	reg.Close(ctx)
	if got := list(); len(got) != 0 {
		t.Fatalf("after Close: entries %q, want none", got)
	}
}
