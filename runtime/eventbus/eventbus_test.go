package eventbus_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/queuemax/queuemax/runtime/eventbus"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func every(string) bool { return true }

func TestBus_DeliversInOrder(t *testing.T) {
	t.Parallel()
	b := eventbus.New[int](eventbus.Options{})
	var got []int
	b.Subscribe("all", every, func(r eventbus.Record[int]) { got = append(got, r.Event) })
	for i := range 100 {
		b.Publish("n", "", 0, time.Time{}, i)
	}
	b.Close() // delivers what is buffered
	for i, v := range got {
		if v != i {
			t.Fatalf("delivery %d = %d, want %d (out of order)", i, v, i)
		}
	}
	if len(got) != 100 {
		t.Errorf("delivered %d records, want 100", len(got))
	}
}

func TestBus_BlockedSubscriberDropsAndCounts(t *testing.T) {
	t.Parallel()
	b := eventbus.New[int](eventbus.Options{Buffer: 2})
	entered := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var slow []int
	b.Subscribe("slow", every, func(r eventbus.Record[int]) {
		if r.Event == 0 {
			close(entered)
			<-release
		}
		mu.Lock()
		slow = append(slow, r.Event)
		mu.Unlock()
	})
	fast := make(chan int, 10)
	b.Subscribe("fast", every, func(r eventbus.Record[int]) { fast <- r.Event })

	b.Publish("n", "", 0, time.Time{}, 0)
	<-entered // the slow callback holds record 0; its buffer is empty
	if v := <-fast; v != 0 {
		t.Fatalf("fast subscriber got %d, want 0", v)
	}
	for i := 1; i <= 5; i++ {
		if _, ok := b.Publish("n", "", 0, time.Time{}, i); !ok {
			t.Fatal("Publish returned false on an open bus")
		}
		// One at a time, so that only the blocked subscriber can overflow.
		if v := <-fast; v != i {
			t.Fatalf("fast subscriber got %d, want %d", v, i)
		}
	}
	st := b.Stats()
	if st.Dropped != 3 || st.Subscribers[0].Dropped != 3 || st.Subscribers[1].Dropped != 0 {
		t.Errorf("Dropped total %d, slow %d, fast %d; want 3, 3, 0", st.Dropped, st.Subscribers[0].Dropped, st.Subscribers[1].Dropped)
	}
	if st.Subscribers[0].Buffered != 2 {
		t.Errorf("slow Buffered = %d, want 2", st.Subscribers[0].Buffered)
	}
	close(release)
	b.Close()
	if diff := cmp.Diff([]int{0, 1, 2}, slow); diff != "" {
		t.Errorf("slow subscriber deliveries (-want +got):\n%s", diff)
	}
	st = b.Stats()
	if st.Published != 6 || st.ByKind["n"] != 6 || st.Delivered != 9 {
		t.Errorf("Stats = %+v, want 6 published, 9 delivered", st)
	}
}

func TestBus_CauseLinks(t *testing.T) {
	t.Parallel()
	b := eventbus.New[string](eventbus.Options{})
	defer b.Close()
	pub := func(kind, key string, level int) eventbus.Record[string] {
		r, _ := b.Publish(kind, key, level, time.Time{}, kind+" "+key)
		return r
	}
	e1 := pub("enqueued", "job:1", 1)
	r1 := pub("retried", "job:1", 2)
	pub("alert", "", 0)
	c2 := pub("completed", "job:2", 2) // its enqueue arrives late
	e2 := pub("enqueued", "job:2", 1)
	p2 := pub("periodic", "job:2", 0) // arrives after the enqueue it caused
	c1 := pub("completed", "job:1", 2)
	if r1.Cause != e1.ID || c1.Cause != e1.ID {
		t.Errorf("job 1 causes: retried %d, completed %d; want %d", r1.Cause, c1.Cause, e1.ID)
	}
	if c2.Cause != 0 {
		t.Errorf("completion published before its enqueue has Cause %d, want 0", c2.Cause)
	}
	causes := map[uint64]uint64{}
	for _, r := range b.History() {
		causes[r.ID] = r.Cause
	}
	if causes[c2.ID] != e2.ID || causes[e2.ID] != p2.ID || causes[p2.ID] != 0 {
		t.Errorf("late links: completed→%d enqueued→%d periodic→%d; want %d, %d, 0",
			causes[c2.ID], causes[e2.ID], causes[p2.ID], e2.ID, p2.ID)
	}
	var sb strings.Builder
	if err := eventbus.WriteTree(&sb, b.History(), func(r eventbus.Record[string]) string { return r.Event }); err != nil {
		t.Fatal(err)
	}
	want := `#1 enqueued job:1
├─ #2 retried job:1
└─ #7 completed job:1
#3 alert 
#6 periodic job:2
└─ #5 enqueued job:2
   └─ #4 completed job:2
`
	if diff := cmp.Diff(want, sb.String()); diff != "" {
		t.Errorf("WriteTree mismatch (-want +got):\n%s", diff)
	}
}

func TestBus_HistoryIsBounded(t *testing.T) {
	t.Parallel()
	b := eventbus.New[int](eventbus.Options{History: 3})
	defer b.Close()
	b.Publish("enqueued", "job:1", 1, time.Time{}, 1)
	for i := range 3 {
		b.Publish("other", fmt.Sprint(i), 0, time.Time{}, i)
	}
	late, _ := b.Publish("completed", "job:1", 2, time.Time{}, 9)
	if late.Cause != 0 {
		t.Errorf("cause of a record whose parent left the history = %d, want 0", late.Cause)
	}
	h := b.History()
	var ids []uint64
	for _, r := range h {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]uint64{3, 4, 5}, ids); diff != "" {
		t.Errorf("History IDs (-want +got):\n%s", diff)
	}
}

func TestBus_TreeMarksEvictedCause(t *testing.T) {
	t.Parallel()
	recs := []eventbus.Record[string]{{ID: 5, Cause: 2, Event: "a"}, {ID: 6, Cause: 5, Event: "b"}}
	var sb strings.Builder
	eventbus.WriteTree(&sb, recs, func(r eventbus.Record[string]) string { return r.Event })
	want := "#5 a (caused by #2, no longer in history)\n└─ #6 b\n"
	if sb.String() != want {
		t.Errorf("WriteTree = %q, want %q", sb.String(), want)
	}
}

func TestBus_PanicIsRecovered(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var panics []string
	b := eventbus.New[int](eventbus.Options{OnPanic: func(sub, kind string, v any, stack []byte) {
		mu.Lock()
		defer mu.Unlock()
		panics = append(panics, fmt.Sprintf("%s %s %v", sub, kind, v))
	}})
	done := make(chan int, 2)
	b.Subscribe("bad", every, func(r eventbus.Record[int]) {
		if r.Event == 1 {
			panic("boom")
		}
		done <- r.Event
	})
	b.Publish("n", "", 0, time.Time{}, 1)
	b.Publish("n", "", 0, time.Time{}, 2)
	if v := <-done; v != 2 {
		t.Errorf("after a panic got %d, want 2", v)
	}
	b.Close()
	if diff := cmp.Diff([]string{"bad n boom"}, panics); diff != "" {
		t.Errorf("OnPanic calls (-want +got):\n%s", diff)
	}
	if st := b.Stats(); st.Panics != 1 || st.Delivered != 2 {
		t.Errorf("Panics %d Delivered %d, want 1 and 2", st.Panics, st.Delivered)
	}
}

func TestBus_UnsubscribeAndClose(t *testing.T) {
	t.Parallel()
	b := eventbus.New[int](eventbus.Options{})
	got := make(chan int, 10)
	unsub := b.Subscribe("x", func(k string) bool { return k == "x" }, func(r eventbus.Record[int]) { got <- r.Event })
	b.Publish("y", "", 0, time.Time{}, 0) // filtered out
	b.Publish("x", "", 0, time.Time{}, 1)
	if v := <-got; v != 1 {
		t.Fatalf("got %d, want 1", v)
	}
	unsub()
	unsub() // idempotent
	b.Publish("x", "", 0, time.Time{}, 2)
	if n := len(b.Stats().Subscribers); n != 0 {
		t.Errorf("%d subscribers after unsubscribe, want 0", n)
	}
	b.Close()
	b.Close() // idempotent
	if _, ok := b.Publish("x", "", 0, time.Time{}, 3); ok {
		t.Error("Publish after Close returned true")
	}
	b.Subscribe("late", every, func(eventbus.Record[int]) { t.Error("callback on a closed bus") })()
	select {
	case v := <-got:
		t.Errorf("got %d after unsubscribe", v)
	default:
	}
}
