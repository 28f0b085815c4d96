package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/breaker"
	"github.com/queuemax/queuemax/runtime/store"
	"github.com/queuemax/queuemax/runtime/store/sqlitestore"
)

// live is an engine running on a real SQLite store in t.TempDir() with
// the wall clock, whose handlers are per task: the harness of the tests
// of Run's behaviour (retries, snoozes, acknowledgements, drains).
type live struct {
	t      *testing.T
	st     *sqlitestore.Store
	ev     *Events
	cfg    Config
	exec   ExecConfig
	e      *Engine
	events <-chan *Event
	stop   func()
}

// newLive returns a live engine of one shard, not started, with handlers
// hs; adjust l.cfg and l.exec, then call start.
func newLive(t *testing.T, hs map[string]*Handler) *live {
	t.Helper()
	return newLiveIn(t, t.TempDir(), 1, hs)
}

// newLiveIn is newLive on the data directory dir of shards shards: a
// second one on the same directory is another process (its own store,
// worker ID and events) sharing the queue.
func newLiveIn(t *testing.T, dir string, shards int, hs map[string]*Handler) *live {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Options{Dir: dir, Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	l := &live{t: t, st: st, ev: NewEvents(log, time.Now)}
	wake := make(chan struct{}, 1)
	l.exec = ExecConfig{Store: st, Handlers: hs, Events: l.ev, RetryDelay: time.Second, MaxSnoozes: 100, Wake: wake, Log: log}
	l.cfg = Config{Store: st, WorkerID: "w1", Shards: shards, Workers: 8, ClaimBatch: 8,
		PollInterval: time.Millisecond, HeartbeatInterval: time.Second, RecoveryInterval: time.Minute,
		DrainTimeout: 5 * time.Second, ShutdownGrace: time.Second, StuckTimeout: time.Minute,
		Tasks: slices.Sorted(func(yield func(string) bool) {
			for name := range hs {
				if !yield(name) {
					return
				}
			}
		}),
		Wake: wake, Log: log}
	// Claims go by breaker (one per task, as the client builds them);
	// these never open.
	l.cfg.Breakers = make(map[string]breaker.Policy, len(hs))
	for name := range hs {
		l.cfg.Breakers[name] = breaker.Policy{Threshold: 1 << 20, Timeout: time.Minute}
	}
	events, cancel := l.ev.Subscribe("test", nil, 10000)
	t.Cleanup(cancel)
	l.events = events
	return l
}

// start runs the engine until the test ends or stop is called; stop
// returns once Run has.
func (l *live) start() {
	l.e = New(withExec(l.cfg, NewExecutor(l.exec)))
	done := make(chan struct{})
	go func() { l.e.Run(context.Background()); close(done) }()
	stopped := false
	l.stop = func() {
		if !stopped {
			stopped = true
			l.e.Stop()
			<-done
		}
	}
	l.t.Cleanup(l.stop)
}

func withExec(cfg Config, x *Executor) Config { cfg.Exec = x; return cfg }

// enqueue stores one job of task with payload (a JSON object) and
// maxAttempts, and wakes the engine.
func (l *live) enqueue(task, payload string, maxAttempts int) store.JobID {
	l.t.Helper()
	ids, err := l.st.Insert(l.t.Context(), []store.InsertParams{{Task: task, Payload: json.RawMessage(payload),
		MaxAttempts: maxAttempts, RetryDelay: time.Second, Now: time.Now().UTC()}})
	if err != nil {
		l.t.Fatal(err)
	}
	select {
	case l.cfg.Wake <- struct{}{}:
	default:
	}
	return ids[0]
}

// wait returns the next n events of kinds (other kinds are skipped),
// failing the test after 30 s.
func (l *live) wait(n int, kinds ...EventKind) []Event {
	l.t.Helper()
	var out []Event
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case e := <-l.events:
			if len(kinds) == 0 || slices.Contains(kinds, e.Kind) {
				out = append(out, *e)
			}
		case <-timeout:
			l.t.Fatalf("got %d events of %v, want %d: %+v", len(out), kinds, n, out)
		}
	}
	return out
}

// job reads one stored job.
func (l *live) job(id store.JobID) *store.Job {
	l.t.Helper()
	j, err := l.st.Job(l.t.Context(), id)
	if err != nil {
		l.t.Fatal(err)
	}
	return j
}
