package queuemax

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// busFlakyHandler fails each job's first attempt (retrying after 1ms) and
// completes the second.
func busFlakyHandler(name string) Handler {
	return Handler{Name: name, Func: func(ctx context.Context, j *Job) (any, error) {
		if j.Attempts == 1 {
			return nil, RetryAfter(time.Millisecond, errors.New("flaky"))
		}
		return nil, nil
	}}
}

// newTestBus opens a bus on c that Cleanup closes.
func newTestBus(t *testing.T, c *Client, o EventBusOptions) *EventBus {
	t.Helper()
	bus := NewEventBus(c, o)
	t.Cleanup(bus.Close)
	return bus
}

func TestEventBus_CausalityTree(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1, Handlers: []Handler{busFlakyHandler("flaky")}})
	bus := newTestBus(t, b.c, EventBusOptions{})
	id, err := b.c.Enqueue(b.ctx, "flaky", map[string]int{}, Opts{})
	if err != nil {
		t.Fatal(err)
	}
	// Await subscribes before the work starts, so nothing is missed.
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	wait := Await(bus, func(e JobCompleted) bool { return e.JobID == id })
	stop := run(t, b.c)
	done, err := wait(ctx)
	if err != nil {
		t.Fatalf("Await: %v", err)
	}
	stop()
	if done.Attempt != 2 || done.Task != "flaky" || done.Shard != 0 {
		t.Errorf("JobCompleted = %+v, want attempt 2 of task flaky on shard 0", done)
	}
	h := bus.History()
	if len(h) != 3 {
		t.Fatalf("History has %d events, want 3:\n%s", len(h), bus.Tree())
	}
	enq, ok1 := h[0].(JobEnqueued)
	retried, ok2 := h[1].(JobRetried)
	if !ok1 || !ok2 {
		t.Fatalf("History = %T, %T, %T; want JobEnqueued, JobRetried, JobCompleted", h[0], h[1], h[2])
	}
	if retried.CauseID != enq.ID || done.CauseID != enq.ID || enq.CauseID != 0 {
		t.Errorf("causes: enqueued→%d retried→%d completed→%d; want 0, %d, %d", enq.CauseID, retried.CauseID, done.CauseID, enq.ID, enq.ID)
	}
	if retried.Error != "flaky" || retried.RetryAt.IsZero() || retried.Attempt != 1 {
		t.Errorf("JobRetried = %+v", retried)
	}
	want := fmt.Sprintf(`#1 job_enqueued job=%[1]d shard=0 task=flaky
├─ #2 job_retried job=%[1]d attempt=1 error="flaky"
└─ #3 job_completed job=%[1]d attempt=2
`, id)
	if diff := cmp.Diff(want, bus.Tree()); diff != "" {
		t.Errorf("Tree mismatch (-want +got):\n%s", diff)
	}
	st := bus.Stats()
	wantKinds := map[EventKind]uint64{EventEnqueued: 1, EventRetried: 1, EventCompleted: 1}
	if diff := cmp.Diff(wantKinds, st.ByKind); diff != "" || st.Dispatched != 3 || st.Dropped != 0 {
		t.Errorf("Stats = %+v; ByKind (-want +got):\n%s", st, diff)
	}
}

func TestEventBus_PeriodicCausesEnqueue(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	bus := newTestBus(t, b.c, EventBusOptions{})
	slot := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	// Either order of the two events gives the same tree.
	for _, periodicFirst := range []bool{false, true} {
		id := JobID(1024)
		if periodicFirst {
			id = 2048
		}
		enq := Event{Kind: EventEnqueued, JobID: id, Task: "nightly"}
		per := Event{Kind: EventPeriodic, JobID: id, Task: "nightly", Slot: slot}
		if periodicFirst {
			bus.publish(per)
			bus.publish(enq)
		} else {
			bus.publish(enq)
			bus.publish(per)
		}
		bus.publish(Event{Kind: EventCompleted, JobID: id, Attempt: 1})
	}
	want := `#2 periodic_enqueued task=nightly job=1024 slot=2026-01-02T03:00:00Z
└─ #1 job_enqueued job=1024 shard=0 task=nightly
   └─ #3 job_completed job=1024 attempt=1
#4 periodic_enqueued task=nightly job=2048 slot=2026-01-02T03:00:00Z
└─ #5 job_enqueued job=2048 shard=0 task=nightly
   └─ #6 job_completed job=2048 attempt=1
`
	if diff := cmp.Diff(want, bus.Tree()); diff != "" {
		t.Errorf("Tree mismatch (-want +got):\n%s", diff)
	}
}

func TestEventBus_Ordering(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 4})
	bus := newTestBus(t, b.c, EventBusOptions{Kinds: []EventKind{EventEnqueued}})
	var mu sync.Mutex
	var ids []uint64
	all := make(chan struct{})
	Subscribe(bus, func(e JobEnqueued) {
		mu.Lock()
		defer mu.Unlock()
		ids = append(ids, e.ID)
		if len(ids) == 100 {
			close(all)
		}
	})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if _, err := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	<-all
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("delivery %d has ID %d, want %d: events out of order", i, id, i+1)
		}
	}
}

func TestEventBus_SubscribePattern(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1, AlertThreshold: 1})
	bus := newTestBus(t, b.c, EventBusOptions{})
	jobs := make(chan EventKind, 10)
	every := make(chan EventKind, 10)
	alerts := make(chan EventKind, 10)
	for pattern, ch := range map[string]chan EventKind{"job_*": jobs, "*": every, "al?rt": alerts} {
		if _, err := bus.SubscribePattern(pattern, func(e Event) { ch <- e.Kind }); err != nil {
			t.Fatalf("SubscribePattern(%q): %v", pattern, err)
		}
	}
	// Two pending jobs exceed the threshold of 1: two enqueues, one alert.
	if _, err := b.c.EnqueueMany(b.ctx, []EnqueueParams{{Task: "t", Payload: map[string]int{}}, {Task: "t", Payload: map[string]int{}}}); err != nil {
		t.Fatal(err)
	}
	recv := func(ch chan EventKind, n int) []EventKind {
		var got []EventKind
		for range n {
			got = append(got, <-ch)
		}
		return got
	}
	if diff := cmp.Diff([]EventKind{EventEnqueued, EventEnqueued, EventAlert}, recv(every, 3)); diff != "" {
		t.Errorf(`"*" received (-want +got):\n%s`, diff)
	}
	if diff := cmp.Diff([]EventKind{EventEnqueued, EventEnqueued}, recv(jobs, 2)); diff != "" {
		t.Errorf(`"job_*" received (-want +got):\n%s`, diff)
	}
	if diff := cmp.Diff([]EventKind{EventAlert}, recv(alerts, 1)); diff != "" {
		t.Errorf(`"al?rt" received (-want +got):\n%s`, diff)
	}
	bus.Close() // delivers what is buffered: nothing more may arrive
	if len(jobs) != 0 {
		t.Errorf(`"job_*" received an alert`)
	}

	for _, bad := range []string{"job_[", "jobs_*", "JobCompleted", ""} {
		if _, err := bus.SubscribePattern(bad, func(Event) {}); err == nil {
			t.Errorf("SubscribePattern(%q) error = nil, want one", bad)
		}
	}
}

func TestExpect(t *testing.T) {
	t.Parallel()
	t.Run("TimesOutWithContext", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		bus := newTestBus(t, b.c, EventBusOptions{})
		if _, err := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		// The enqueue happened before the call: Expect must not see it.
		ctx, cancel := context.WithTimeout(b.ctx, 20*time.Millisecond)
		defer cancel()
		_, err := Expect[JobEnqueued](ctx, bus, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Expect error = %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("DefaultTimeout", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		bus := newTestBus(t, b.c, EventBusOptions{ExpectTimeout: 10 * time.Millisecond})
		_, err := Expect[JobCompleted](context.WithoutCancel(b.ctx), bus, nil)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "job_completed") {
			t.Errorf("Expect error = %v, want context.DeadlineExceeded naming job_completed", err)
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		bus := newTestBus(t, b.c, EventBusOptions{})
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		if _, err := Expect[Alert](ctx, bus, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("Expect error = %v, want context.Canceled", err)
		}
	})
	t.Run("MatchesPredicate", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 2})
		bus := newTestBus(t, b.c, EventBusOptions{})
		wait := Await(bus, func(e JobEnqueued) bool { return e.Task == "second" })
		if _, err := b.c.Enqueue(b.ctx, "first", map[string]int{}, Opts{}); err != nil {
			t.Fatal(err)
		}
		id, err := b.c.Enqueue(b.ctx, "second", map[string]int{}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		e, err := wait(b.ctx)
		if err != nil || e.JobID != id || e.Kind() != EventEnqueued || e.ID != 2 || e.Meta().ID != 2 {
			t.Errorf("wait = %+v, %v; want the JobEnqueued of job %d, event #2", e, err, id)
		}
		if n := len(bus.Stats().Subscribers); n != 0 {
			t.Errorf("%d subscribers after the wait, want 0", n)
		}
	})
	t.Run("BusClosed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		bus := NewEventBus(b.c, EventBusOptions{})
		errc := make(chan error, 1)
		go func() {
			_, err := Expect[JobFailed](b.ctx, bus, nil)
			errc <- err
		}()
		bus.Close()
		if err := <-errc; !errors.Is(err, ErrBusClosed) {
			t.Errorf("Expect error = %v, want ErrBusClosed", err)
		}
	})
}

func TestEventBus_BlockedSubscriberDropsEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	bus := newTestBus(t, b.c, EventBusOptions{Buffer: 2, Kinds: []EventKind{EventEnqueued}})
	entered := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var got []JobID
	Subscribe(bus, func(e JobEnqueued) {
		if e.ID == 1 {
			close(entered)
			<-release // blocked until the test lets go
		}
		mu.Lock()
		got = append(got, e.JobID)
		mu.Unlock()
	})
	var ids []JobID
	enqueue := func() {
		id, err := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	enqueue()
	<-entered
	// The subscriber is stuck: the queue must not be. Two events fit its
	// buffer, three are dropped.
	for range 5 {
		enqueue()
	}
	st := bus.Stats()
	if st.Dropped != 3 || len(st.Subscribers) != 1 || st.Subscribers[0].Dropped != 3 || st.Subscribers[0].Buffered != 2 {
		t.Errorf("Stats = %+v, want 3 dropped and 2 buffered", st)
	}
	if st.Dispatched != 6 || st.ByKind[EventEnqueued] != 6 {
		t.Errorf("Dispatched = %d, ByKind = %v, want 6", st.Dispatched, st.ByKind)
	}
	close(release)
	bus.Close()
	if diff := cmp.Diff(ids[:3], got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

func TestEventBus_PanickingSubscriber(t *testing.T) {
	t.Parallel()
	var logs busLogBuffer
	b := setup(t, Config{Shards: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	bus := newTestBus(t, b.c, EventBusOptions{})
	after := make(chan JobID, 2)
	Subscribe(bus, func(e JobEnqueued) {
		if e.ID == 1 {
			panic("subscriber bug")
		}
		after <- e.JobID
	})
	for range 2 {
		if _, err := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{}); err != nil {
			t.Fatalf("Enqueue with a panicking subscriber: %v", err)
		}
	}
	<-after // the subscriber still runs after its panic
	bus.Close()
	if st := bus.Stats(); st.Panics != 1 {
		t.Errorf("Panics = %d, want 1", st.Panics)
	}
	if s := logs.String(); !strings.Contains(s, "event subscriber panicked") || !strings.Contains(s, "subscriber bug") {
		t.Errorf("log = %q, want the recovered panic", s)
	}
}

func TestEventBus_Close(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	bus := NewEventBus(b.c, EventBusOptions{})
	for _, k := range EventKinds {
		if !b.c.hasSubscribers(k) {
			t.Fatalf("no client callback for %s", k)
		}
	}
	calls := make(chan struct{}, 10)
	unsub := Subscribe(bus, func(JobEnqueued) { calls <- struct{}{} })
	bus.Close()
	bus.Close() // idempotent
	unsub()     // harmless after Close
	for _, k := range EventKinds {
		if b.c.hasSubscribers(k) {
			t.Errorf("client still has a callback for %s after Close", k)
		}
	}
	if _, err := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	Subscribe(bus, func(JobEnqueued) { calls <- struct{}{} })() // no-op on a closed bus
	if len(calls) != 0 || bus.Stats().Dispatched != 0 {
		t.Errorf("closed bus delivered %d events, dispatched %d", len(calls), bus.Stats().Dispatched)
	}
	// goleak in TestMain checks that the subscriber goroutine is gone.
}

func TestEventBus_Unsubscribe(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	bus := newTestBus(t, b.c, EventBusOptions{})
	got := make(chan JobID, 10)
	unsub := Subscribe(bus, func(e JobEnqueued) { got <- e.JobID })
	id, _ := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{})
	if g := <-got; g != id {
		t.Fatalf("got %d, want %d", g, id)
	}
	unsub()
	b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{})
	bus.Close()
	if len(got) != 0 {
		t.Errorf("unsubscribed callback ran %d times", len(got))
	}
}

// busLogBuffer is a bytes.Buffer safe for concurrent use, for logs.
type busLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *busLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *busLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestEventBus_TypedEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	bus := newTestBus(t, b.c, EventBusOptions{})
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	events := []Event{
		{Kind: EventEnqueued, Time: at, JobID: 1024, Shard: 0, Task: "t"},
		{Kind: EventRetried, Time: at, JobID: 1024, Task: "t", Attempt: 1, Error: "e1", RetryAt: at.Add(time.Minute)},
		{Kind: EventFailed, Time: at, JobID: 1024, Task: "t", Attempt: 2, Error: "e2"},
		{Kind: EventCompleted, Time: at, JobID: 2048, Task: "u", Attempt: 1},
		{Kind: EventAlert, Time: at, AlertType: "QUEUE_SIZE", Pending: 1001, Threshold: 1000},
		{Kind: EventCircuit, Time: at, Task: "t", From: "closed", To: "open"},
		{Kind: EventPeriodic, Time: at, Task: "p", JobID: 3072, Slot: at},
	}
	for _, ev := range events {
		bus.publish(ev)
	}
	m := func(id, cause uint64) EventMeta { return EventMeta{ID: id, CauseID: cause, Time: at} }
	want := []TypedEvent{
		JobEnqueued{m(1, 0), 1024, 0, "t"},
		JobRetried{m(2, 1), 1024, 0, "t", 1, "e1", at.Add(time.Minute)},
		JobFailed{m(3, 1), 1024, 0, "t", 2, "e2"},
		JobCompleted{m(4, 0), 2048, 0, "u", 1},
		Alert{m(5, 0), "QUEUE_SIZE", 1001, 1000},
		CircuitChanged{m(6, 0), "t", "closed", "open"},
		PeriodicEnqueued{m(7, 0), "p", 3072, 0, at},
	}
	got := bus.History()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("History mismatch (-want +got):\n%s", diff)
	}
	for i, e := range got {
		if e.Kind() != events[i].Kind || e.Meta().ID != uint64(i+1) {
			t.Errorf("event %d: Kind %s, Meta %+v", i, e.Kind(), e.Meta())
		}
	}
	wantTree := `#1 job_enqueued job=1024 shard=0 task=t
├─ #2 job_retried job=1024 attempt=1 error="e1"
└─ #3 job_failed job=1024 attempt=2 error="e2"
#4 job_completed job=2048 attempt=1
#5 alert QUEUE_SIZE pending=1001 threshold=1000
#6 circuit_state_changed task=t closed→open
#7 periodic_enqueued task=p job=3072 slot=2026-05-01T12:00:00Z
`
	if diff := cmp.Diff(wantTree, bus.Tree()); diff != "" {
		t.Errorf("Tree mismatch (-want +got):\n%s", diff)
	}
}
