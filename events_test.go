package queuemax

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recv reads n events from ch, failing after 30s.
func recv(t *testing.T, ch <-chan *Event, n int) []*Event {
	t.Helper()
	var out []*Event
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d events, want %d", len(out), n)
			}
			out = append(out, e)
		case <-timeout:
			t.Fatalf("got %d events, want %d", len(out), n)
		}
	}
	return out
}

func TestClient_Subscribe(t *testing.T) {
	t.Parallel()

	t.Run("EveryOutcome", func(t *testing.T) {
		t.Parallel()
		var snoozed, flaky atomic.Int64
		handlers := []Handler{
			Define("t.OK", TaskOptions{}, func(context.Context, struct{}) error { return nil }),
			Define("t.Snooze", TaskOptions{}, func(context.Context, struct{}) error {
				if snoozed.Add(1) == 1 {
					return Snooze(0)
				}
				return nil
			}),
			Define("t.Flaky", TaskOptions{}, func(context.Context, struct{}) error {
				if flaky.Add(1) == 1 {
					return RetryAfter(time.Millisecond, errors.New("busy"))
				}
				return nil
			}),
			Define("t.Dead", TaskOptions{}, func(context.Context, struct{}) error { return Permanent(errors.New("bad")) }),
			Define("t.Cancel", TaskOptions{}, func(context.Context, struct{}) error { return Cancel(errors.New("stop")) }),
		}
		// One worker: each attempt's event is sent before the next attempt
		// (a retry due at once) can run and send its own.
		b := setup(t, Config{Handlers: handlers, Shards: 1, Workers: 1})
		all, cancelAll := b.c.Subscribe() // every kind
		defer cancelAll()
		// One task per run, so each job's events come in a known order.
		want := map[string][]EventKind{
			"t.OK":     {EventEnqueued, EventCompleted},
			"t.Snooze": {EventEnqueued, EventSnoozed, EventCompleted},
			"t.Flaky":  {EventEnqueued, EventRetried, EventCompleted},
			"t.Dead":   {EventEnqueued, EventFailed},
			"t.Cancel": {EventEnqueued, EventCancelled},
		}
		run(t, b.c)
		for _, task := range []string{"t.OK", "t.Snooze", "t.Flaky", "t.Dead", "t.Cancel"} {
			id, err := b.c.Enqueue(b.ctx, task, struct{}{}, Opts{})
			if err != nil {
				t.Fatal(err)
			}
			var got []EventKind
			for _, e := range recv(t, all, len(want[task])) {
				if e.JobID != id || e.Task != task || e.Time.IsZero() {
					t.Errorf("%s: event %+v; want job %d", task, e, id)
				}
				if e.Kind == EventSnoozed && (e.Attempt != 1 || e.RetryAt.IsZero()) {
					t.Errorf("%s: snoozed event %+v; want attempt 1 and RetryAt", task, e)
				}
				got = append(got, e.Kind)
			}
			if diff := cmp.Diff(want[task], got); diff != "" {
				t.Errorf("%s: event kinds mismatch (-want +got):\n%s", task, diff)
			}
		}
		// Cancelling a waiting job is an event too.
		id, err := b.c.Enqueue(b.ctx, "t.OK", struct{}{}, Opts{RunAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.c.Cancel(b.ctx, id); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, all, 2); got[0].Kind != EventEnqueued || got[1].Kind != EventCancelled || got[1].JobID != id {
			t.Errorf("events %+v, %+v; want job_enqueued then job_cancelled for %d", got[0], got[1], id)
		}
	})

	t.Run("KindsFilter", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		ch, cancel := b.c.Subscribe(EventCompleted)
		defer cancel()
		if _, err := b.c.Enqueue(b.ctx, "t.X", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-ch:
			t.Errorf("received %+v; want nothing for a job_completed subscription", e)
		default:
		}
	})

	t.Run("SlowReaderNeverBlocks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Handlers: []Handler{Define("t.N", TaskOptions{}, func(context.Context, struct{}) error { return nil })}})
		ch, cancel := b.c.SubscribeConfig(&SubscribeConfig{ChanSize: 1, Kinds: []EventKind{EventEnqueued, EventCompleted}})
		defer cancel()
		// Nobody reads ch: enqueues and workers go on, and the drops are counted.
		const n = 20
		for range n {
			if _, err := b.c.Enqueue(b.ctx, "t.N", struct{}{}, Opts{}); err != nil {
				t.Fatal(err)
			}
		}
		run(t, b.c)
		ctx, stop := context.WithTimeout(b.ctx, 30*time.Second)
		defer stop()
		if err := b.c.WaitUntilEmpty(ctx); err != nil {
			t.Fatalf("WaitUntilEmpty: %v (a full subscriber channel blocked the workers?)", err)
		}
		// The completion event follows the commit that empties the queue:
		// wait for the last one to be counted.
		deadline := time.Now().Add(30 * time.Second)
		for b.c.EventStats().Sent+b.c.EventStats().Dropped < 2*n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polling with a deadline, not synchronisation by sleep
		}
		got := b.c.EventStats()
		if want := (EventStats{Subscriptions: 1, Sent: 1, Dropped: 2*n - 1}); got.Subscriptions != want.Subscriptions || got.Sent != want.Sent || got.Dropped != want.Dropped {
			t.Errorf("EventStats() = %+v, want %+v", got, want)
		}
		// The exact totals lose nothing to the full channel.
		if e := got.Emitted; e[EventEnqueued]["t.N"] != n || e[EventCompleted]["t.N"] != n {
			t.Errorf("EventStats().Emitted = %v, want %d enqueued and %d completed t.N", e, n, n)
		}
		if len(ch) != 1 {
			t.Errorf("channel holds %d events, want its buffer of 1", len(ch))
		}
	})

	t.Run("CancelAndCloseCloseTheChannel", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		ch1, cancel1 := b.c.Subscribe(EventEnqueued)
		ch2, cancel2 := b.c.Subscribe(EventEnqueued)
		defer cancel2()
		cancel1()
		cancel1() // idempotent
		if _, ok := <-ch1; ok {
			t.Error("channel open after cancel")
		}
		if _, err := b.c.Enqueue(b.ctx, "t.X", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, ch2, 1)[0]; e.Kind != EventEnqueued {
			t.Errorf("event %+v, want job_enqueued", e)
		}
		if got := b.c.EventStats().Subscriptions; got != 1 {
			t.Errorf("Subscriptions = %d after one cancel, want 1", got)
		}
		b.c.Close()
		if _, ok := <-ch2; ok {
			t.Error("channel open after Close")
		}
		ch3, cancel3 := b.c.Subscribe()
		defer cancel3()
		if _, ok := <-ch3; ok {
			t.Error("Subscribe after Close returned an open channel")
		}
		if got := b.c.EventStats().Subscriptions; got != 0 {
			t.Errorf("Subscriptions = %d after Close, want 0", got)
		}
	})

	t.Run("WithoutEvents", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		ch, cancel := b.c.Subscribe(EventEnqueued)
		defer cancel()
		if _, err := b.c.Enqueue(WithoutEvents(b.ctx), "t.X", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.c.Enqueue(b.ctx, "t.Y", struct{}{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, ch, 1)[0]; e.Task != "t.Y" {
			t.Errorf("first event is for %s, want t.Y (t.X was enqueued WithoutEvents)", e.Task)
		}
	})

	t.Run("CountedBeforeSent", func(t *testing.T) {
		t.Parallel()
		// A reader sees each event only once the exact totals count it
		// (the metrics packages and the httpserver example rely on this).
		b := setup(t, Config{})
		ch, cancel := b.c.Subscribe(EventEnqueued)
		defer cancel()
		for i := range 3 {
			if _, err := b.c.Enqueue(b.ctx, "t.X", struct{}{}, Opts{}); err != nil {
				t.Fatal(err)
			}
			recv(t, ch, 1)
			if got := b.c.EventStats().Emitted[EventEnqueued]["t.X"]; got != uint64(i+1) {
				t.Errorf("counted %d when event %d arrived, want %d", got, i+1, i+1)
			}
		}
	})

	t.Run("CountedWithoutSubscribers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		ps := []EnqueueParams{{Task: "t.A", Payload: struct{}{}}, {Task: "t.A", Payload: struct{}{}}, {Task: "t.B", Payload: struct{}{}}}
		if _, err := b.c.EnqueueMany(b.ctx, ps); err != nil {
			t.Fatal(err)
		}
		if _, err := b.c.EnqueueMany(WithoutEvents(b.ctx), ps); err != nil {
			t.Fatal(err)
		}
		want := map[EventKind]map[string]uint64{EventEnqueued: {"t.A": 2, "t.B": 1}}
		if got := b.c.EventStats().Emitted; !maps.EqualFunc(got, want, maps.Equal) {
			t.Errorf("Emitted = %v, want %v", got, want)
		}
	})

	t.Run("UnknownKindPanics", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{})
		defer func() {
			if r := recover(); r == nil {
				t.Error("Subscribe(\"job_done\") did not panic")
			}
		}()
		b.c.Subscribe(EventKind("job_done"))
	})

	t.Run("KindsListed", func(t *testing.T) {
		t.Parallel()
		for _, k := range []EventKind{EventSnoozed, EventCancelled} {
			if !slices.Contains(EventKinds, k) {
				t.Errorf("EventKinds lacks %s", k)
			}
		}
	})
}
