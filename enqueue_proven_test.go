package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
)

type provenArgs struct {
	N int    `json:"n"`
	S string `json:"s"`
}

// provenLiar's encoding is not what its decode accepts.
type provenLiar struct {
	N int `json:"n"`
}

func (provenLiar) MarshalJSON() ([]byte, error) { return []byte(`{"other":1}`), nil }

// An enqueue skips the typed decode only for a payload it encoded itself
// from a value of the decode's own type, through Define's own Validate:
// a Validate the application set, a raw payload, a value of another type
// and a type whose encoding its decode refuses are all still checked.
func TestEnqueue_ValidationSkippedOnlyWhenProven(t *testing.T) {
	t.Parallel()
	var custom atomic.Int32
	own := Define("t.own", TaskOptions{}, func(context.Context, provenArgs) error { return nil })
	replaced := Define("t.replaced", TaskOptions{}, func(context.Context, provenArgs) error { return nil })
	replaced.Validate = func(raw json.RawMessage) error {
		custom.Add(1)
		var a provenArgs
		if err := json.Unmarshal(raw, &a); err != nil || a.N < 0 {
			return errors.New("n must not be negative")
		}
		return nil
	}
	liar := Define("t.liar", TaskOptions{}, func(context.Context, provenLiar) error { return nil })
	b := setup(t, Config{Handlers: []Handler{own, replaced, liar}})

	if _, err := b.c.EnqueueMany(b.ctx, []EnqueueParams{{Task: "t.own", Payload: provenArgs{N: 1}}, {Task: "t.own", Payload: &provenArgs{N: 2}}}); err != nil {
		t.Fatalf("values of the task's type: %v", err)
	}
	if _, err := b.c.Enqueue(b.ctx, "t.own", json.RawMessage(`{"n":1,"x":2}`), Opts{}); !errors.Is(err, ErrPayloadShape) {
		t.Errorf("raw payload with an unknown key: %v, want ErrPayloadShape", err)
	}
	if _, err := b.c.Enqueue(b.ctx, "t.own", struct{ X int }{1}, Opts{}); !errors.Is(err, ErrPayloadShape) {
		t.Errorf("a value of another type: %v, want ErrPayloadShape", err)
	}
	if _, err := b.c.Enqueue(b.ctx, "t.replaced", provenArgs{N: -1}, Opts{}); err == nil || custom.Load() != 1 {
		t.Errorf("the application's Validate: err %v, called %d times; want its error, once", err, custom.Load())
	}
	if _, err := b.c.Enqueue(b.ctx, "t.liar", provenLiar{N: 1}, Opts{}); !errors.Is(err, ErrPayloadShape) {
		t.Errorf("a type that encodes itself: %v, want ErrPayloadShape", err)
	}
	// A typed handle whose task has no handler here: its own decode.
	if _, err := NewTask[provenLiar](b.c, "t.elsewhere", TaskOptions{}).Enqueue(b.ctx, provenLiar{N: 1}); !errors.Is(err, ErrPayloadShape) {
		t.Errorf("typed handle, a type that encodes itself: %v, want ErrPayloadShape", err)
	}
	if _, err := NewTask[provenArgs](b.c, "t.elsewhere", TaskOptions{}).Enqueue(b.ctx, provenArgs{N: 3}); err != nil {
		t.Errorf("typed handle, a value of its type: %v", err)
	}
	s, err := b.c.Stats(b.ctx)
	if err != nil || s.Pending != 3 {
		t.Errorf("Stats = %d pending, %v; want the 3 valid jobs", s.Pending, err)
	}
}
