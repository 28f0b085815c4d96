package queuemax

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

func TestConfig_RetriesBound(t *testing.T) {
	t.Parallel()
	_, err := Open(t.Context(), Config{Dir: t.TempDir(), MaxRetries: Ptr(MaxRetriesLimit + 1)})
	if ce, ok := errors.AsType[*ConfigError](err); !ok || ce.Field != "MaxRetries" {
		t.Errorf("Open with MaxRetries %d = %v, want a ConfigError", MaxRetriesLimit+1, err)
	}
	b := setup(t, Config{Shards: 1})
	for _, n := range []int{MaxRetriesLimit + 1, math.MaxInt} {
		if _, err := b.c.Enqueue(b.ctx, "t", echoArgs{}, Opts{MaxRetries: Ptr(n)}); !errors.Is(err, ErrInvalidRetries) {
			t.Errorf("Enqueue with MaxRetries %d = %v, want ErrInvalidRetries", n, err)
		}
	}
	h := Define("t", TaskOptions{MaxRetries: Ptr(math.MaxInt)}, func(context.Context, echoArgs) error { return nil })
	if _, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}}); !errors.Is(err, ErrInvalidRetries) {
		t.Errorf("Open with a handler of MaxRetries MaxInt = %v, want ErrInvalidRetries", err)
	}
	id, err := b.c.Enqueue(b.ctx, "t", echoArgs{}, Opts{MaxRetries: Ptr(MaxRetriesLimit)})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := b.c.Job(b.ctx, id); err != nil || j.MaxAttempts != MaxRetriesLimit+1 {
		t.Errorf("job = %+v, %v; want %d attempts", j, err, MaxRetriesLimit+1)
	}
}

func TestParseJobID_SeqOverflow(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0:9223372036854775807", fmt.Sprintf("3:%d", int64(1)<<53)} {
		if id, err := ParseJobID(s); err == nil {
			t.Errorf("ParseJobID(%q) = %d (shard %d, seq %d), want an error", s, id, id.Shard(), id.Seq())
		}
	}
	if id, err := ParseJobID(fmt.Sprintf("3:%d", int64(1)<<53-1)); err != nil || id.Shard() != 3 || id.Seq() != 1<<53-1 {
		t.Errorf("ParseJobID of the largest seq = %d, %v", id, err)
	}
}

func TestShardOutOfRange(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 2})
	for _, sh := range []int{-1, -2, 2} {
		if _, err := b.c.Jobs(b.ctx, ListParams{Shard: Ptr(sh)}); !errors.Is(err, ErrInvalidShard) {
			t.Errorf("Jobs(shard %d) = %v, want ErrInvalidShard", sh, err)
		}
		if _, err := b.c.DeadLetters(b.ctx, ListParams{Shard: Ptr(sh)}); !errors.Is(err, ErrInvalidShard) {
			t.Errorf("DeadLetters(shard %d) = %v, want ErrInvalidShard", sh, err)
		}
	}
	for _, sh := range []int{-2, 2} {
		if _, err := b.c.RetryFailed(b.ctx, sh); !errors.Is(err, ErrInvalidShard) {
			t.Errorf("RetryFailed(%d) = %v, want ErrInvalidShard", sh, err)
		}
	}
	if _, err := b.c.RetryFailed(b.ctx, AllShards); err != nil {
		t.Errorf("RetryFailed(AllShards) = %v", err)
	}
}

func TestCircuitOff(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		cfg  Config
		opts TaskOptions
	}{
		"Config":      {Config{CircuitThreshold: CircuitOff}, TaskOptions{}},
		"TaskOptions": {Config{}, TaskOptions{CircuitOff: true}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := Define("t.Fails", tc.opts, func(context.Context, echoArgs) error { return boom })
			cfg := tc.cfg
			cfg.Shards, cfg.Handlers, cfg.MaxRetries = 1, []Handler{h}, Ptr(0)
			cfg.Logger = quiet
			b := setup(t, cfg)
			evs := collect(b.c, EventFailed)
			stop := run(t, b.c)
			const n = 8 // more than the default threshold of 5
			for range n {
				if _, err := b.c.Enqueue(b.ctx, "t.Fails", echoArgs{}, Opts{}); err != nil {
					t.Fatal(err)
				}
			}
			waitEvents(t, evs, n)
			s, err := b.c.Stats(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st := s.Circuits["t.Fails"]; st != "closed" {
				t.Errorf("circuit after %d failures = %q, want closed (off)", n, st)
			}
			stop()
		})
	}
}

func TestAlertOff(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1, AlertThreshold: AlertOff})
	evs := collect(b.c, EventAlert)
	if _, err := b.c.Enqueue(b.ctx, "t", echoArgs{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	b.c.checkAlert(b.ctx, true)
	select {
	case e := <-evs:
		t.Errorf("alert %+v with alerts off", e)
	case <-time.After(50 * time.Millisecond): // alerts are emitted synchronously
	}
}
