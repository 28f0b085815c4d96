package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queuemax/queuemax/queuemaxtype"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	c   *Client
	ctx context.Context
	dir string
}

// setup opens a client on a fresh directory; cfg's Dir and Logger are
// filled in when empty.
func setup(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	cfg = pgConfig(t, cfg)
	if cfg.Dir == "" && cfg.Store == nil {
		cfg.Dir = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if len(cfg.Handlers) == 0 && cfg.DefaultHandler == nil && !cfg.strictNames {
		// Most tests enqueue, from a client without handlers, tasks that
		// no worker published yet: the documented opt-in (see
		// catalog_test.go for the resolution itself, with strictNames).
		cfg.AllowUnknownTasks = true
	}
	c, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &testBundle{c: c, ctx: t.Context(), dir: cfg.Dir}
}

// run starts c.Run and returns a stop function that cancels it and checks
// that Run returned nil.
func run(t *testing.T, c *Client) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestOpen_OffSentinels: each …Off sentinel is accepted.
func TestOpen_OffSentinels(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{CircuitThreshold: CircuitOff}, {AlertThreshold: AlertOff}, {CompletedRetention: RetentionOff}, {CircuitThreshold: 1, AlertThreshold: 1}} {
		cfg.Dir = t.TempDir()
		c, err := Open(t.Context(), cfg)
		if err != nil {
			t.Errorf("Open(%+v): %v", cfg, err)
			continue
		}
		c.Close()
	}
}

func TestOpen_ConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cfg       Config
		wantField string
	}{
		{"NegativeShards", Config{Shards: -1}, "Shards"},
		{"TooManyShards", Config{Shards: 1025}, "Shards"},
		{"NegativeRetries", Config{MaxRetries: Ptr(-1)}, "MaxRetries"},
		{"StuckBelowHeartbeat", Config{HeartbeatInterval: time.Minute, StuckTimeout: time.Second}, "StuckTimeout"},
		{"RateWithoutPer", Config{RateLimit: Rate{Limit: 5}}, "RateLimit"},
		// Only the documented …Off sentinel (-1) is a valid negative.
		{"CircuitBelowOff", Config{CircuitThreshold: -2}, "CircuitThreshold"},
		{"AlertBelowOff", Config{AlertThreshold: -5}, "AlertThreshold"},
		{"RetentionBelowOff", Config{CompletedRetention: -time.Second}, "CompletedRetention"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.Dir = t.TempDir()
			_, err := Open(t.Context(), tt.cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.wantField || !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Open error = %v, want *ConfigError for %s", err, tt.wantField)
			}
		})
	}
}

func TestOpen_BadDirectories(t *testing.T) {
	t.Parallel()
	t.Run("ShardMismatch", func(t *testing.T) {
		t.Parallel()
		b := setup(t, Config{Shards: 3})
		id, err := b.c.Enqueue(b.ctx, "t", map[string]int{"a": 1}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		b.c.Close()
		for _, n := range []int{2, 4} {
			if _, err := Open(t.Context(), Config{Dir: b.dir, Shards: n}); !errors.Is(err, ErrShardMismatch) {
				t.Errorf("Open(shards=%d) on a 3-shard dir error = %v, want ErrShardMismatch", n, err)
			}
		}
		c, err := Open(t.Context(), Config{Dir: b.dir, Shards: 3})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer c.Close()
		if _, err := c.Job(t.Context(), id); err != nil {
			t.Errorf("job lost after refused opens: %v", err)
		}
	})
	t.Run("NotADatabase", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		for i := range 2 {
			content := []byte("")
			if i == 1 {
				content = []byte(strings.Repeat("this is not sqlite ", 100))
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shard_%d.db", i)), content, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Open(t.Context(), Config{Dir: dir, Shards: 2})
		if !errors.Is(err, ErrNotDatabase) {
			t.Errorf("Open error = %v, want ErrNotDatabase", err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "shard_1.db"))
		if !strings.HasPrefix(string(b), "this is not sqlite") {
			t.Errorf("Open modified the corrupt shard file")
		}
	})
	t.Run("DirCannotBeCreated", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "file")
		os.WriteFile(file, nil, 0o644)
		_, err := Open(t.Context(), Config{Dir: filepath.Join(file, "data")})
		if err == nil || !strings.Contains(err.Error(), "create data dir") {
			t.Errorf("Open error = %v, want a create data dir error", err)
		}
	})
	t.Run("DuplicateHandler", func(t *testing.T) {
		t.Parallel()
		h := Define("t.A", TaskOptions{}, func(context.Context, struct{}) error { return nil })
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h, h}})
		if !errors.Is(err, ErrDuplicateTask) {
			t.Errorf("Open error = %v, want ErrDuplicateTask", err)
		}
	})
	t.Run("BadCron", func(t *testing.T) {
		t.Parallel()
		h := Define("t.P", TaskOptions{}, func(context.Context, struct{}) error { return nil })
		h.Periodic = &Periodic{Cron: "61 * * * *"}
		_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{h}})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "t.P") {
			t.Errorf("Open error = %v, want ErrInvalidConfig naming t.P", err)
		}
	})
}

func TestClient_EnqueueValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 2})
	deep := strings.Repeat(`{"a":`, 21) + "1" + strings.Repeat("}", 21)
	okDeep := strings.Repeat(`{"a":`, 20) + "1" + strings.Repeat("}", 20)
	tests := []struct {
		name    string
		payload any
		opts    Opts
		wantErr error
	}{
		{"Object", map[string]int{"a": 1}, Opts{}, nil},
		{"Struct", struct{ A int }{1}, Opts{}, nil},
		{"Array", []int{1}, Opts{}, ErrInvalidPayload},
		{"String", "x", Opts{}, ErrInvalidPayload},
		{"Null", nil, Opts{}, ErrInvalidPayload},
		{"RawNotJSON", json.RawMessage(`{"a":`), Opts{}, ErrInvalidPayload},
		{"Unencodable", map[string]any{"f": func() {}}, Opts{}, ErrInvalidPayload},
		{"TooLarge", map[string]string{"a": strings.Repeat("x", MaxPayloadBytes)}, Opts{}, ErrInvalidPayload},
		{"TooDeep", json.RawMessage(deep), Opts{}, ErrInvalidPayload},
		{"TwentyLevels", json.RawMessage(okDeep), Opts{}, nil},
		{"BadPriority", map[string]int{}, Opts{Priority: Ptr(Priority(3))}, ErrInvalidPriority},
		{"NegativePriority", map[string]int{}, Opts{Priority: Ptr(Priority(-1))}, ErrInvalidPriority},
		{"NegativeRetries", map[string]int{}, Opts{MaxRetries: Ptr(-1)}, ErrInvalidRetries},
		{"ZeroRetries", map[string]int{}, Opts{MaxRetries: Ptr(0)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.c.Enqueue(b.ctx, "t", tt.payload, tt.opts)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Enqueue error = %v, want %v", err, tt.wantErr)
			}
		})
	}
	// Nothing invalid was stored: exactly the four valid jobs are.
	s, err := b.c.Stats(b.ctx)
	if err != nil || s.Pending != 4 {
		t.Errorf("Stats = %d pending, %v; want the 4 valid jobs", s.Pending, err)
	}
}

func TestClient_EnqueueStoresOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 6, MaxRetries: Ptr(7)})
	id, err := b.c.Enqueue(b.ctx, "t.X", map[string]int{"a": 1}, Opts{Key: Ptr(int64(-1)), Priority: Ptr(PriorityHigh), MaxRetries: Ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	j, err := b.c.Job(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.Shard != 5 || *j.PartitionKey != -1 || j.Priority != PriorityHigh || j.MaxAttempts != 1 || j.Task != "t.X" {
		t.Errorf("job = shard %d key %d prio %d max %d task %q; want 5, -1, 2, 1, t.X", j.Shard, *j.PartitionKey, j.Priority, j.MaxAttempts, j.Task)
	}
	id, _ = b.c.Enqueue(b.ctx, "t.X", map[string]int{}, Opts{})
	j, _ = b.c.Job(b.ctx, id)
	if j.MaxAttempts != 8 {
		t.Errorf("default MaxAttempts = %d, want Config.MaxRetries+1 = 8", j.MaxAttempts)
	}
}

func TestClient_EnqueueManyAllOrNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 4})
	params := []EnqueueParams{
		{Task: "t", Payload: map[string]int{"a": 1}},
		{Task: "t", Payload: []int{1}},
	}
	if _, err := b.c.EnqueueMany(b.ctx, params); !errors.Is(err, ErrInvalidPayload) || !strings.Contains(err.Error(), "job 1") {
		t.Fatalf("EnqueueMany error = %v, want ErrInvalidPayload naming job 1", err)
	}
	if s, _ := b.c.Stats(b.ctx); s.Pending != 0 {
		t.Fatalf("pending after failed batch = %d, want 0", s.Pending)
	}
	params = params[:0]
	for i := range 100 {
		params = append(params, EnqueueParams{Task: "t", Payload: map[string]int{"i": i}})
	}
	ids, err := b.c.EnqueueMany(b.ctx, params)
	if err != nil || len(ids) != 100 {
		t.Fatalf("EnqueueMany = %d ids, %v", len(ids), err)
	}
	for i, id := range ids {
		j, err := b.c.Job(b.ctx, id)
		if err != nil || string(j.Payload) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("job %d = %v, %v; want payload i=%d", i, j, err, i)
		}
	}
}

func TestClient_UseAfterClose(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 1})
	if err := b.c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.c.Enqueue(b.ctx, "t", map[string]int{}, Opts{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want ErrClosed", err)
	}
	if _, err := b.c.Stats(b.ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Stats after Close = %v, want ErrClosed", err)
	}
	if err := b.c.Run(b.ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
	if err := b.c.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
}

func TestClient_SurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := setup(t, Config{Dir: dir, Shards: 3})
	var ids []JobID
	for i := range 30 {
		id, err := b.c.Enqueue(b.ctx, "t", map[string]int{"i": i}, Opts{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := b.c.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := setup(t, Config{Dir: dir, Shards: 3})
	for i, id := range ids {
		j, err := b2.c.Job(b2.ctx, id)
		if err != nil || string(j.Payload) != fmt.Sprintf(`{"i":%d}`, i) || j.Status != StatusPending {
			t.Fatalf("job %d after reopen = %+v, %v", i, j, err)
		}
	}
}

func TestOpen_ReadOnlyAndShardDetection(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nope")
	if _, err := Open(t.Context(), Config{Dir: missing, ReadOnly: true}); err == nil {
		t.Error("read-only Open of a missing dir succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only Open created %s", missing)
	}
	b := setup(t, Config{Shards: 3})
	b.c.Enqueue(b.ctx, "t", echoArgs{}, Opts{})
	b.c.Close()

	ro := setup(t, Config{Dir: b.dir, ReadOnly: true})
	if ro.c.Shards() != 3 {
		t.Errorf("Shards() = %d, want the 3 found in the directory", ro.c.Shards())
	}
	if s, err := ro.c.Stats(ro.ctx); err != nil || s.Pending != 1 {
		t.Errorf("read-only Stats = %d pending, %v; want 1", s.Pending, err)
	}
	if _, err := ro.c.Enqueue(ro.ctx, "t", echoArgs{}, Opts{}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Enqueue error = %v, want ErrReadOnly", err)
	}
	if _, err := ro.c.Purge(ro.ctx); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Purge error = %v, want ErrReadOnly", err)
	}
	if _, err := ro.c.Claim(ro.ctx, "w", 1); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Claim error = %v, want ErrReadOnly", err)
	}
	if err := ro.c.Run(ro.ctx); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only Run error = %v, want ErrReadOnly", err)
	}
	if s, _ := ro.c.Stats(ro.ctx); s.Pending != 1 {
		t.Errorf("pending after refused writes = %d, want 1", s.Pending)
	}
}

// TestResult_UnknownIDIsNotFound: an ID whose shard the queue lacks is a
// job that does not exist, like any other.
func TestResult_UnknownIDIsNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 6})
	for _, id := range []JobID{671, queuemaxtype.NewJobID(5, 99999), 0, -3} {
		if _, err := b.c.Result(b.ctx, id); !errors.Is(err, ErrJobNotFound) {
			t.Errorf("Client.Result(%d) = %v, want ErrJobNotFound", id, err)
		}
		if _, err := Result[int](b.ctx, b.c, id); !errors.Is(err, ErrJobNotFound) {
			t.Errorf("Result(%d) = %v, want ErrJobNotFound", id, err)
		}
		if _, err := b.c.Job(b.ctx, id); !errors.Is(err, ErrJobNotFound) {
			t.Errorf("Job(%d) = %v, want ErrJobNotFound", id, err)
		}
	}
}

// TestEnqueueManyOneShard checks that a call's keyless jobs are stored on
// one shard (one transaction) and still run.
func TestEnqueueManyOneShard(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 4})
	params := make([]EnqueueParams, 300)
	for i := range params {
		params[i] = EnqueueParams{Task: "t", Payload: map[string]int{"i": i}}
	}
	ids, err := b.c.EnqueueMany(b.ctx, params)
	if err != nil || len(ids) != len(params) {
		t.Fatalf("EnqueueMany = %d ids, %v", len(ids), err)
	}
	for i, id := range ids {
		if id.Shard() != ids[0].Shard() {
			t.Fatalf("job %d on shard %d, job 0 on %d", i, id.Shard(), ids[0].Shard())
		}
		if i > 0 && id.Seq() <= ids[i-1].Seq() {
			t.Fatalf("ids out of order: %d after %d", id, ids[i-1])
		}
	}
	if s, err := b.c.Stats(b.ctx); err != nil || s.Pending != int64(len(params)) {
		t.Fatalf("Stats = %+v, %v; want %d pending", s, err, len(params))
	}
}
