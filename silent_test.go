package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuemax/queuemax/runtime/store"
)

// Tests for issue 11: nothing fails silently.

type mailArgs struct {
	To   string             `json:"to"`
	CC   *string            `json:"cc"`
	N    int                `json:"n"`
	Tags []string           `json:"tags"`
	Meta map[string]int     `json:"meta"`
	Msg  struct{ S string } `json:"msg"`
}

func nopMail(context.Context, mailArgs) error { return nil }

func pendingJobs(t *testing.T, c *Client) int64 {
	t.Helper()
	s, err := c.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return s.Pending + s.Scheduled
}

func TestEnqueue_UnknownTask(t *testing.T) {
	t.Parallel()
	handlers := []Handler{
		Define("example.com/app/jobs.SendEmail", TaskOptions{}, nopMail),
		Define("example.com/app/billing.Charge", TaskOptions{}, func(context.Context, struct{}) error { return nil }),
		Define("example.com/app/legacy.Charge", TaskOptions{}, func(context.Context, struct{}) error { return nil }),
	}
	b := setup(t, Config{Shards: 2, Handlers: handlers})
	ok := json.RawMessage(`{"to":"a@b","n":1,"tags":[],"meta":{},"msg":{"S":"x"}}`)

	_, err := b.c.Enqueue(b.ctx, "SendEmial", ok, Opts{})
	if !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), `did you mean "example.com/app/jobs.SendEmail"`) {
		t.Errorf("misspelt task: err = %v, want ErrUnknownTask with a suggestion", err)
	}
	_, err = b.c.Enqueue(b.ctx, "Charge", json.RawMessage(`{}`), Opts{})
	if !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), "billing.Charge") || !strings.Contains(err.Error(), "legacy.Charge") {
		t.Errorf("ambiguous short name: err = %v, want both candidates", err)
	}
	for _, short := range []string{"SendEmail", "jobs.SendEmail"} {
		id, err := b.c.Enqueue(b.ctx, short, ok, Opts{})
		if err != nil {
			t.Fatalf("Enqueue(%q): %v", short, err)
		}
		j, err := b.c.Job(b.ctx, id)
		if err != nil || j.Task != "example.com/app/jobs.SendEmail" {
			t.Errorf("Enqueue(%q) stored task %q, %v; want the full name", short, j.Task, err)
		}
	}
	before := pendingJobs(t, b.c)
	_, err = b.c.EnqueueMany(b.ctx, []EnqueueParams{{Task: "SendEmail", Payload: ok}, {Task: "Nope", Payload: map[string]int{}}})
	if !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), "job 1") {
		t.Errorf("EnqueueMany with an unknown task: err = %v", err)
	}
	path := filepath.Join(t.TempDir(), "jobs.jsonl")
	os.WriteFile(path, []byte(`{"task":"SendEmail","payload":`+string(ok)+`}`+"\n"+`{"task":"SendMail","payload":{}}`+"\n"), 0o600)
	_, err = b.c.EnqueueFile(b.ctx, path, nil)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || !errors.Is(err, ErrUnknownTask) {
		t.Errorf("EnqueueFile: err = %v, want ErrUnknownTask on line 2", err)
	}
	if got := pendingJobs(t, b.c); got != before {
		t.Errorf("pending = %d after refused batches, want %d", got, before)
	}
	// A generated (typed) handle carries its full name: kept as is.
	if _, err := NewTask[echoArgs](b.c, "example.com/other.Task", TaskOptions{}).Enqueue(b.ctx, echoArgs{}); err != nil {
		t.Errorf("typed enqueue of another package's task: %v", err)
	}

	t.Run("OptOut", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1, Handlers: handlers, AllowUnknownTasks: true})
		if _, err := b.c.Enqueue(b.ctx, "other.Service", map[string]int{}, Opts{}); err != nil {
			t.Errorf("AllowUnknownTasks: %v", err)
		}
	})
	t.Run("NoHandlers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 1})
		if _, err := b.c.Enqueue(b.ctx, "anything", map[string]int{}, Opts{}); err != nil {
			t.Errorf("a producer without handlers: %v", err)
		}
	})
}

func TestEnqueue_PayloadShape(t *testing.T) {
	t.Parallel()
	const task = "example.com/jobs.Mail"
	b := setup(t, Config{Shards: 2, Handlers: []Handler{Define(task, TaskOptions{}, nopMail)}})
	good := `{"to":"a@b","n":1,"tags":["x"],"meta":{"k":1},"msg":{"S":"hi"}}`
	tests := []struct {
		name, payload, field string
	}{
		{"UnknownKey", `{"to":"a@b","n":1,"tags":[],"meta":{},"msg":{"S":""},"extra":1}`, "extra"},
		{"CaseMismatch", `{"To":"a@b","n":1,"tags":[],"meta":{},"msg":{"S":""}}`, "To"},
		{"Missing", `{"n":1,"tags":[],"meta":{},"msg":{"S":""}}`, "to"},
		{"WrongType", `{"to":"a@b","n":"one","tags":[],"meta":{},"msg":{"S":""}}`, "n"},
		{"WrongElement", `{"to":"a@b","n":1,"tags":[1],"meta":{},"msg":{"S":""}}`, "tags[0]"},
		{"NestedUnknown", `{"to":"a@b","n":1,"tags":[],"meta":{},"msg":{"S":"x","T":1}}`, "msg.T"},
		{"NestedMissing", `{"to":"a@b","n":1,"tags":[],"meta":{},"msg":{}}`, "msg.S"},
		{"NestedCaseMismatch", `{"to":"a@b","n":1,"tags":[],"meta":{},"msg":{"s":""}}`, "msg.s"},
		{"NullScalar", `{"to":null,"n":1,"tags":[],"meta":{},"msg":{"S":""}}`, "to"},
	}
	for _, tt := range tests {
		_, err := b.c.Enqueue(b.ctx, task, json.RawMessage(tt.payload), Opts{})
		var pe *PayloadShapeError
		if !errors.As(err, &pe) || pe.Field != tt.field || !errors.Is(err, ErrPayloadShape) || !errors.Is(err, ErrInvalidPayload) {
			t.Errorf("%s: err = %v, want a *PayloadShapeError for field %q", tt.name, err, tt.field)
		}
	}
	// Pointer parameters are optional; null slices and maps are their zero value.
	for _, p := range []string{good, `{"to":"a","cc":"c","n":0,"tags":null,"meta":null,"msg":{"S":""}}`} {
		if _, err := b.c.Enqueue(b.ctx, task, json.RawMessage(p), Opts{}); err != nil {
			t.Errorf("Enqueue(%s): %v", p, err)
		}
	}
	before := pendingJobs(t, b.c)
	_, err := b.c.EnqueueMany(b.ctx, []EnqueueParams{{Task: task, Payload: json.RawMessage(good)}, {Task: task, Payload: json.RawMessage(`{"to":1}`)}})
	if !errors.Is(err, ErrPayloadShape) {
		t.Errorf("EnqueueMany with a bad payload: err = %v", err)
	}
	path := filepath.Join(t.TempDir(), "jobs.json")
	os.WriteFile(path, []byte("[\n{\"task\":\""+task+"\",\"payload\":"+good+"},\n{\"task\":\""+task+"\",\"payload\":{\"to\":\"x\"}}\n]\n"), 0o600)
	_, err = b.c.EnqueueFile(b.ctx, path, nil)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !errors.Is(err, ErrPayloadShape) || !strings.Contains(err.Error(), `"n"`) {
		t.Errorf("EnqueueFile: err = %v, want a shape error naming \"n\" on line 3", err)
	}
	if got := pendingJobs(t, b.c); got != before {
		t.Errorf("pending = %d after refused batches, want %d (nothing stored)", got, before)
	}
	// The typed path runs the same check, which its own encoding passes.
	if _, err := NewTask[mailArgs](b.c, task, TaskOptions{}).Enqueue(b.ctx, mailArgs{To: "a"}); err != nil {
		t.Errorf("typed enqueue: %v", err)
	}
}

func TestRun_PayloadThatNoLongerDecodesIsDeadLettered(t *testing.T) {
	t.Parallel()
	const task = "example.com/jobs.Mail"
	dir := t.TempDir()
	// A producer without handlers stores what an older signature wrote.
	old := setup(t, Config{Dir: dir, Shards: 1})
	id, err := old.c.Enqueue(old.ctx, task, json.RawMessage(`{"recipient":"a@b"}`), Opts{MaxRetries: Ptr(5)})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	h := Define(task, TaskOptions{}, func(context.Context, mailArgs) error { calls.Add(1); return nil })
	b := setup(t, Config{Dir: dir, Shards: 1, Handlers: []Handler{h}})
	evs := collect(b.c, EventFailed, EventRetried)
	run(t, b.c)
	ev := waitEvents(t, evs, 1)[0]
	if ev.Kind != EventFailed || ev.JobID != id || !strings.Contains(ev.Error, `"recipient"`) {
		t.Errorf("event = %+v, want the job dead-lettered naming the field", ev)
	}
	j, err := b.c.Job(b.ctx, id)
	if err != nil || j.Status != StatusFailed || j.Attempts != 1 {
		t.Errorf("job = %+v, %v; want failed after one attempt", j, err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler ran %d times on a payload that does not fit", n)
	}
}

func TestWorkerRegistry(t *testing.T) {
	t.Parallel()
	const mine, limited = "example.com/jobs.Mine", "example.com/jobs.Limited"
	dir := t.TempDir()
	failing := Define(mine, TaskOptions{MaxRetries: Ptr(0)}, func(context.Context, struct{}) error { return Unavailable(errors.New("down")) })
	slow := Define(limited, TaskOptions{RateLimit: Rate{Limit: 7, Per: time.Minute}}, func(context.Context, struct{}) error { return nil })
	w := setup(t, Config{Dir: dir, Shards: 2, Handlers: []Handler{failing, slow}, Workers: 3, WorkerID: "w1",
		HeartbeatInterval: 50 * time.Millisecond, StuckTimeout: 10 * time.Second, CircuitThreshold: 1})
	stop := run(t, w.c)

	// Another process (here: another client on the directory) sees it.
	cli := setup(t, Config{Dir: dir})
	var ws []WorkerInfo
	waitFor(t, "the worker's registry entry", func() bool {
		var err error
		ws, err = cli.c.Workers(cli.ctx)
		if err != nil {
			t.Fatalf("Workers: %v", err)
		}
		return len(ws) == 1
	})
	got := ws[0]
	if got.ID != "w1" || got.PID != os.Getpid() || got.Host == "" || got.Concurrency != 3 ||
		strings.Join(got.Tasks, ",") != limited+","+mine || got.StartedAt.IsZero() || !got.ExpiresAt.After(got.UpdatedAt) {
		t.Errorf("worker = %+v", got)
	}
	if rl := got.RateLimits[limited]; rl.Limit != 7 || rl.Per != "1m0s" {
		t.Errorf("rate limit = %+v, want 7 per 1m0s", rl)
	}

	// A job of a task nobody runs is warned about; the breaker state of
	// the running worker shows in the other process's Stats.
	if _, err := cli.c.Enqueue(cli.ctx, "example.com/jobs.Orphan", map[string]int{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.c.Enqueue(cli.ctx, mine, map[string]int{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	var s Stats
	waitFor(t, "the open breaker in another process's stats", func() bool {
		var err error
		s, err = cli.c.Stats(cli.ctx)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		return s.Circuits[mine] == "open"
	})
	if s.CircuitState != "open" || !s.IsHealthy || !slices.Contains(s.Degraded, mine) || len(s.Workers) != 1 {
		t.Errorf("stats = %+v, want the worker's open breaker", s)
	}
	if s.RateLimits[limited].Limit != 7 {
		t.Errorf("stats rate limits = %+v", s.RateLimits)
	}
	if ti := s.Tasks["example.com/jobs.Orphan"]; ti.Pending != 1 || ti.Workers != 0 {
		t.Errorf("orphan task info = %+v", ti)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "example.com/jobs.Orphan") {
		t.Errorf("warnings = %q, want one about the orphan task", s.Warnings)
	}

	// A clean stop removes the entry.
	stop()
	ws, err := cli.c.Workers(cli.ctx)
	if err != nil || len(ws) != 0 {
		t.Errorf("after stop: workers = %+v, %v; want none", ws, err)
	}
	// The breaker is the store's: it stays open after the worker stopped.
	s, err = cli.c.Stats(cli.ctx)
	if err != nil || s.Tasks["example.com/jobs.Orphan"].Workers != 0 || len(s.Circuits) != 1 || s.Circuits[mine] != "open" {
		t.Errorf("stats after stop = %+v, %v; want the stored breaker still open", s, err)
	}
}

func TestWorkerRegistry_EntriesExpire(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	now := time.Now()
	info, _ := json.Marshal(WorkerInfo{ID: "dead", Tasks: []string{}})
	if err := b.c.st.WorkerPut(b.ctx, store.WorkerRecord{ID: "dead#1", Info: info, StartedAt: now.Add(-time.Hour),
		UpdatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if ws, err := b.c.Workers(b.ctx); err != nil || len(ws) != 0 {
		t.Errorf("workers = %+v, %v; want the expired entry left out", ws, err)
	}
}

func TestStats_UptimeIsTheQueues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A worker whose Run started ten minutes ago (its clock is behind;
	// long heartbeats keep its entry live meanwhile).
	w := setup(t, Config{Dir: dir, Shards: 1, Handlers: []Handler{Define("t", TaskOptions{}, func(context.Context, struct{}) error { return nil })},
		HeartbeatInterval: time.Hour, StuckTimeout: 2 * time.Hour})
	w.c.cfg.now = func() time.Time { return time.Now().Add(-10 * time.Minute) }
	run(t, w.c)
	cli := setup(t, Config{Dir: dir})
	waitFor(t, "the worker's registry entry", func() bool {
		ws, err := cli.c.Workers(cli.ctx)
		return err == nil && len(ws) == 1
	})
	s, err := cli.c.Stats(cli.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.UptimeSeconds < 590 || s.UptimeSeconds > 700 {
		t.Errorf("uptime = %.0fs, want about 600s (since the worker started, not since this client opened)", s.UptimeSeconds)
	}
}

// brokenStore reports one shard unreadable, as the SQLite store does for
// a shard whose queries fail (locked past BusyTimeout, corrupt).
type brokenStore struct{ store.Store }

func (b brokenStore) Stats(ctx context.Context) ([]store.ShardStats, error) {
	ss, err := b.Store.Stats(ctx)
	if err == nil && len(ss) > 1 {
		ss[1] = store.ShardStats{Shard: 1, LastError: "database is locked (5) (SQLITE_BUSY)"}
	}
	return ss, err
}

func TestHonestReads(t *testing.T) {
	t.Parallel()
	t.Run("CancelledContext", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 2})
		ctx, cancel := context.WithCancel(b.ctx)
		cancel()
		if _, err := b.c.Stats(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Stats = %v, want context.Canceled", err)
		}
		if err := b.c.WaitIdle(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("WaitIdle = %v, want context.Canceled", err)
		}
		if err := b.c.WaitUntilEmpty(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("WaitUntilEmpty = %v, want context.Canceled", err)
		}
		dctx, dcancel := context.WithDeadline(b.ctx, time.Now().Add(-time.Second))
		defer dcancel()
		if _, err := b.c.Stats(dctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stats with an expired deadline = %v", err)
		}
	})
	t.Run("UnreadableShard", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 2})
		b.c.st = brokenStore{b.c.st}
		s, err := b.c.Stats(b.ctx)
		if !errors.Is(err, ErrShardUnavailable) || !strings.Contains(err.Error(), "shard 1") {
			t.Errorf("Stats err = %v, want ErrShardUnavailable naming shard 1", err)
		}
		if s.IsHealthy || s.PerShard[1].Healthy || !s.PerShard[0].Healthy {
			t.Errorf("stats = %+v, want shard 1 reported unhealthy", s)
		}
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		if err := b.c.WaitIdle(ctx); !errors.Is(err, ErrShardUnavailable) {
			t.Errorf("WaitIdle = %v, want ErrShardUnavailable", err)
		}
	})
}

func TestAlert_ProducerOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 2, AlertThreshold: 2})
	alerts := collect(b.c, EventAlert)
	// Three quick enqueues in a process that never runs Run: the crossing
	// happens inside the throttle window, so only the trailing check sees it.
	for range 3 {
		if _, err := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case ev := <-alerts:
		if ev.Pending != 3 || ev.Threshold != 2 {
			t.Errorf("alert = %+v, want 3 > 2", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no alert within 10s of crossing the threshold")
	}
}

func TestDecodeArgs_OtherShapes(t *testing.T) {
	t.Parallel()
	var m map[string]int
	if err := DecodeArgs("t", json.RawMessage(`{"a":1}`), &m); err != nil || m["a"] != 1 {
		t.Errorf("map args: %v, %v", m, err)
	}
	if err := DecodeArgs("t", json.RawMessage(`{"a":"x"}`), &m); !errors.Is(err, ErrPayloadShape) {
		t.Errorf("map args of the wrong type: %v", err)
	}
	type base struct {
		ID int `json:"id"`
	}
	var e struct {
		base
		Name string `json:"name"`
	}
	if err := DecodeArgs("t", json.RawMessage(`{"id":1,"name":"n"}`), &e); err != nil || e.ID != 1 || e.Name != "n" {
		t.Errorf("embedded struct: %+v, %v", e, err)
	}
	if err := DecodeArgs("t", json.RawMessage(`{"id":1,"nope":1}`), &e); !errors.Is(err, ErrPayloadShape) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("embedded struct with an unknown key: %v", err)
	}
	var none struct{}
	if err := DecodeArgs("t", json.RawMessage(`{"x":1}`), &none); !errors.Is(err, ErrPayloadShape) || !strings.Contains(err.Error(), "takes no parameters") {
		t.Errorf("a task without parameters: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRun_LogsTasksNobodyRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	producer := setup(t, Config{Dir: dir, Shards: 1})
	if _, err := producer.c.Enqueue(producer.ctx, "example.com/jobs.Renamed", map[string]int{}, Opts{}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	w := setup(t, Config{Dir: dir, Shards: 1, RecoveryInterval: 50 * time.Millisecond,
		Handlers: []Handler{Define("example.com/jobs.Mine", TaskOptions{}, func(context.Context, struct{}) error { return nil })},
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	run(t, w.c)
	waitFor(t, "the warning about the task nobody runs", func() bool {
		return strings.Contains(logs.String(), "no live worker runs it") && strings.Contains(logs.String(), "example.com/jobs.Renamed")
	})
	if n := strings.Count(logs.String(), "no live worker runs it"); n != 1 {
		t.Errorf("warned %d times, want once while nothing changes:\n%s", n, logs.String())
	}
}
