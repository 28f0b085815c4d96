package engine

import (
	"log/slog"
	"testing"
	"time"

	"github.com/queuemax/queuemax/queuemaxtype"
	"github.com/queuemax/queuemax/runtime/store"
)

// TestEvents_Enqueued: a stored job is one enqueue event (or, without a
// subscriber, one count); a duplicate of a unique job is neither.
func TestEvents_Enqueued(t *testing.T) {
	t.Parallel()
	ps := []store.InsertParams{{Task: "a"}, {Task: "a", Unique: &store.UniqueParams{Duplicate: true}}, {Task: "b"}}
	ids := []queuemaxtype.JobID{1, 2, 3}
	ev := NewEvents(slog.Default(), time.Now)
	ev.Enqueued(t.Context(), ps, ids) // no subscriber: counts only
	if got := ev.Emitted()[queuemaxtype.EventEnqueued]; got["a"] != 1 || got["b"] != 1 {
		t.Errorf("counted %v; want a: 1, b: 1", got)
	}
	ch, cancel := ev.Subscribe("test", []EventKind{queuemaxtype.EventEnqueued}, 10)
	defer cancel()
	ev.Enqueued(t.Context(), ps, ids)
	for _, want := range []queuemaxtype.JobID{1, 3} {
		select {
		case e := <-ch:
			if e.JobID != want {
				t.Errorf("event for job %d, want %d", e.JobID, want)
			}
		default:
			t.Fatalf("no event for job %d", want)
		}
	}
	select {
	case e := <-ch:
		t.Errorf("an event for the duplicate: %+v", e)
	default:
	}
	if got := ev.Emitted()[queuemaxtype.EventEnqueued]; got["a"] != 2 || got["b"] != 2 {
		t.Errorf("counted %v; want a: 2, b: 2", got)
	}
}
