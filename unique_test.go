package queuemax

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type syncArgs struct {
	User int64  `json:"user"`
	Note string `json:"note"`
}

// uniqueBackends runs f on SQLite (6 shards, so a key's shard matters) and
// PostgreSQL.
func uniqueBackends(t *testing.T, handlers []Handler, f func(t *testing.T, cfg Config, b *testBundle)) {
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Handlers: handlers}
			if backend == "PostgreSQL" {
				cfg.Store = newPGTarget(t)
			} else {
				cfg.Dir, cfg.Shards = t.TempDir(), 6
			}
			f(t, cfg, setup(t, cfg))
		})
	}
}

func TestClient_Unique(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, syncArgs) error { return nil }
	byArgs := Define("t.SyncUser", TaskOptions{Unique: UniqueOpts{ByArgs: true}}, noop)
	byKey := Define("t.Report", TaskOptions{Unique: UniqueOpts{ByKey: true}}, noop)
	hourly := Define("t.Digest", TaskOptions{Unique: UniqueOpts{ByPeriod: time.Hour}}, noop)
	uniqueBackends(t, []Handler{byArgs, byKey, hourly}, func(t *testing.T, _ Config, b *testBundle) {
		ctx := b.ctx
		enq := func(task string, payload any, o Opts) EnqueueResult {
			t.Helper()
			rs, err := b.c.EnqueueManyResults(ctx, []EnqueueParams{{Task: task, Payload: payload, Opts: o}})
			if err != nil {
				t.Fatalf("EnqueueManyResults(%s): %v", task, err)
			}
			return rs[0]
		}
		sync := NewTask[syncArgs](b.c, "t.SyncUser", byArgs.Options)

		// By arguments: equal arguments, in any key order, are duplicates.
		first, err := sync.EnqueueResult(ctx, syncArgs{User: 1, Note: "a"})
		if err != nil || first.Duplicate {
			t.Fatalf("first EnqueueResult = %+v, %v; want a new job", first, err)
		}
		id, err := sync.Enqueue(ctx, syncArgs{User: 1, Note: "a"})
		if err != nil || id != first.ID {
			t.Errorf("Enqueue of the same args = %d, %v; want the existing %d and nil", id, err, first.ID)
		}
		if r := enq("t.SyncUser", json.RawMessage(`{ "note":"a", "user":1 }`), Opts{}); !r.Duplicate || r.ID != first.ID {
			t.Errorf("same args reordered = %+v; want duplicate of %d", r, first.ID)
		}
		if r := enq("t.SyncUser", syncArgs{User: 2, Note: "a"}, Opts{}); r.Duplicate {
			t.Errorf("other args = %+v; want a new job", r)
		}
		if r := enq("t.SyncUser", syncArgs{User: 1, Note: "a"}, Opts{Key: Ptr(int64(7))}); r.Duplicate {
			t.Errorf("same args with a partition key = %+v; want a new job (the partition key is part of the key)", r)
		}
		if r := enq("t.SyncUser", syncArgs{User: 1, Note: "a"}, Opts{Unique: &UniqueOpts{}}); r.Duplicate {
			t.Errorf("Opts.Unique = &UniqueOpts{} = %+v; want a new, not unique job", r)
		}
		j, err := b.c.Job(ctx, first.ID)
		if err != nil || len(j.UniqueKey) != 64 {
			t.Errorf("Job.UniqueKey = %q, %v; want a 64-digit hash", j.UniqueKey, err)
		}

		// By key: the caller's key decides, and is required.
		if _, err := b.c.Enqueue(ctx, "t.Report", syncArgs{}, Opts{}); !errors.Is(err, ErrInvalidUnique) {
			t.Errorf("unique-by-key without UniqueKey: %v; want ErrInvalidUnique", err)
		}
		k := enq("t.Report", syncArgs{User: 1}, Opts{UniqueKey: "2026-12"})
		if r := enq("t.Report", syncArgs{User: 2}, Opts{UniqueKey: "2026-12"}); !r.Duplicate || r.ID != k.ID {
			t.Errorf("same UniqueKey, other args = %+v; want duplicate of %d", r, k.ID)
		}
		if r := enq("t.Report", syncArgs{User: 1}, Opts{UniqueKey: "2027-01"}); r.Duplicate {
			t.Errorf("other UniqueKey = %+v; want a new job", r)
		}
		// UniqueKey replaces the arguments of a task unique by them, and
		// makes a job of a task without Unique unique by it.
		a := enq("t.SyncUser", syncArgs{User: 8}, Opts{UniqueKey: "x"})
		if r := enq("t.SyncUser", syncArgs{User: 9}, Opts{UniqueKey: "x"}); !r.Duplicate || r.ID != a.ID {
			t.Errorf("UniqueKey on a task unique by args = %+v; want duplicate of %d", r, a.ID)
		}
		p := enq("t.Digest", syncArgs{}, Opts{Unique: &UniqueOpts{}, UniqueKey: "y"})
		if r := enq("t.Digest", syncArgs{User: 9}, Opts{Unique: &UniqueOpts{}, UniqueKey: "y"}); !r.Duplicate || r.ID != p.ID {
			t.Errorf("UniqueKey on a job without Unique = %+v; want duplicate of %d", r, p.ID)
		}

		// By period: the window of the run time.
		hour := time.Now().UTC().Truncate(time.Hour).Add(3 * time.Hour)
		d1 := enq("t.Digest", syncArgs{Note: "x"}, Opts{RunAt: hour.Add(5 * time.Minute)})
		if r := enq("t.Digest", syncArgs{Note: "y"}, Opts{RunAt: hour.Add(50 * time.Minute)}); !r.Duplicate || r.ID != d1.ID {
			t.Errorf("same hour = %+v; want duplicate of %d", r, d1.ID)
		}
		if r := enq("t.Digest", syncArgs{Note: "x"}, Opts{RunAt: hour.Add(65 * time.Minute)}); r.Duplicate {
			t.Errorf("next hour = %+v; want a new job", r)
		}

		// Bad options are errors naming the problem.
		for _, o := range []UniqueOpts{
			{ByArgs: true, ByKey: true},
			{ByArgs: true, ByState: []Status{StatusPending, StatusCompleted}},
			{ByState: []Status{StatusPending, StatusScheduled, StatusProcessing}},
			{ByPeriod: -time.Second},
			{ByArgs: true, ByState: []Status{StatusPending, StatusScheduled, StatusProcessing, "done"}},
		} {
			if _, err := b.c.Enqueue(ctx, "t.SyncUser", syncArgs{User: 5}, Opts{Unique: &o}); !errors.Is(err, ErrInvalidUnique) {
				t.Errorf("Opts.Unique %+v: %v; want ErrInvalidUnique", o, err)
			}
		}
	})
}

// TestClient_UniqueBatch: a batch with duplicates inside stores the rest,
// reports per job, and emits job_enqueued only for what it stored.
func TestClient_UniqueBatch(t *testing.T) {
	t.Parallel()
	h := Define("t.SyncUser", TaskOptions{Unique: UniqueOpts{ByArgs: true}}, func(context.Context, syncArgs) error { return nil })
	uniqueBackends(t, []Handler{h}, func(t *testing.T, _ Config, b *testBundle) {
		evs := collect(b.c, EventEnqueued)
		task := NewTask[syncArgs](b.c, h.Name, h.Options)
		old, err := task.Enqueue(b.ctx, syncArgs{User: 1})
		if err != nil {
			t.Fatal(err)
		}
		args := []syncArgs{{User: 1}, {User: 2}, {User: 3}, {User: 2}, {User: 4}}
		rs, err := task.EnqueueManyResults(b.ctx, args)
		if err != nil {
			t.Fatalf("EnqueueManyResults: %v", err)
		}
		dups := make([]bool, len(rs))
		for i, r := range rs {
			dups[i] = r.Duplicate
		}
		if want := []bool{true, false, false, true, false}; !slices.Equal(dups, want) {
			t.Errorf("duplicates = %v, want %v", dups, want)
		}
		if rs[0].ID != old || rs[3].ID != rs[1].ID {
			t.Errorf("results %+v: want [0] = %d and [3] = [1]", rs, old)
		}
		// EnqueueMany returns the same IDs, nil error, and stores nothing new.
		ids, err := task.EnqueueMany(b.ctx, args)
		if err != nil {
			t.Fatalf("EnqueueMany: %v", err)
		}
		for i, r := range rs {
			if ids[i] != r.ID {
				t.Errorf("EnqueueMany[%d] = %d, want %d", i, ids[i], r.ID)
			}
		}
		st, err := task.Stats(b.ctx)
		if err != nil || st.Pending != 4 {
			t.Errorf("pending = %d, %v; want 4", st.Pending, err)
		}
		if got := len(waitEvents(t, evs, 4)); got != 4 {
			t.Errorf("job_enqueued events = %d, want 4", got)
		}
		select {
		case e := <-evs:
			t.Errorf("extra job_enqueued event %+v for a duplicate", e)
		default:
		}
	})
}

// TestClient_UniqueFreedByStatus: a job that completes frees its key unless
// completed counts; the row is kept either way (a result), so the rule is
// the status, not the row.
func TestClient_UniqueFreedByStatus(t *testing.T) {
	t.Parallel()
	fn := func(_ context.Context, a syncArgs) (int64, error) { return a.User, nil }
	free := DefineResult("t.Free", TaskOptions{Unique: UniqueOpts{ByArgs: true}}, fn)
	kept := DefineResult("t.Kept", TaskOptions{Unique: UniqueOpts{ByArgs: true,
		ByState: []Status{StatusPending, StatusScheduled, StatusProcessing, StatusCompleted}}}, fn)
	uniqueBackends(t, []Handler{free, kept}, func(t *testing.T, _ Config, b *testBundle) {
		done := collect(b.c, EventCompleted)
		stop := run(t, b.c)
		defer stop()
		for _, h := range []Handler{free, kept} {
			task := NewTask[syncArgs](b.c, h.Name, h.Options)
			id, err := task.Enqueue(b.ctx, syncArgs{User: 1})
			if err != nil {
				t.Fatal(err)
			}
			if e := waitEvents(t, done, 1)[0]; e.JobID != id {
				t.Fatalf("completed %d, want %d", e.JobID, id)
			}
			if j, err := b.c.Job(b.ctx, id); err != nil || j.Status != StatusCompleted {
				t.Fatalf("Job(%d) = %v, %v; want completed and kept", id, j, err)
			}
			r, err := task.EnqueueResult(b.ctx, syncArgs{User: 1})
			if err != nil {
				t.Fatal(err)
			}
			wantDup := h.Name == "t.Kept"
			if r.Duplicate != wantDup || (wantDup && r.ID != id) {
				t.Errorf("%s: enqueue after completion = %+v; want duplicate %v of %d", h.Name, r, wantDup, id)
			}
			if !r.Duplicate {
				waitEvents(t, done, 1)
			}
		}
	})
}

// TestClient_UniqueConcurrent: goroutines of two clients on one queue (two
// processes' worth of connections) enqueue the same arguments at once:
// one job, one ID for all. On SQLite the key picks the shard, so the
// decision holds although the 6 shards are separate files.
func TestClient_UniqueConcurrent(t *testing.T) {
	t.Parallel()
	h := Define("t.SyncUser", TaskOptions{Unique: UniqueOpts{ByArgs: true}}, func(context.Context, syncArgs) error { return nil })
	uniqueBackends(t, []Handler{h}, func(t *testing.T, cfg Config, b *testBundle) {
		other := setup(t, cfg)
		for round := range 3 {
			var (
				wg   sync.WaitGroup
				mu   sync.Mutex
				ids  []JobID
				news int
			)
			start := make(chan struct{})
			for g := range 12 {
				c := b.c
				if g%2 == 1 {
					c = other.c
				}
				wg.Go(func() {
					<-start
					task := NewTask[syncArgs](c, h.Name, h.Options)
					var r EnqueueResult
					var err error
					if g%3 == 0 {
						var rs []EnqueueResult
						rs, err = task.EnqueueManyResults(b.ctx, []syncArgs{{User: int64(100 + g)}, {User: int64(round)}})
						if err == nil {
							r = rs[1]
						}
					} else {
						r, err = task.EnqueueResult(b.ctx, syncArgs{User: int64(round)})
					}
					if err != nil {
						t.Errorf("enqueue: %v", err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					ids = append(ids, r.ID)
					if !r.Duplicate {
						news++
					}
				})
			}
			close(start)
			wg.Wait()
			if slices.Sort(ids); news != 1 || len(slices.Compact(ids)) != 1 {
				t.Errorf("round %d: %d new jobs, IDs %v; want one job for all", round, news, ids)
			}
		}
	})
}

func TestCheckHandler_Unique(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, *Job) (any, error) { return nil, nil }
	for _, tt := range []struct {
		name string
		h    Handler
		want string
	}{
		{"Periodic", Handler{Name: "p", Func: noop, Periodic: &Periodic{Every: time.Hour}, Options: TaskOptions{Unique: UniqueOpts{ByPeriod: time.Hour}}},
			"cannot be unique"},
		{"MissingState", Handler{Name: "s", Func: noop, Options: TaskOptions{Unique: UniqueOpts{ByArgs: true, ByState: []Status{StatusPending}}}},
			"must include pending, scheduled and processing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Open(t.Context(), Config{Dir: t.TempDir(), Handlers: []Handler{tt.h}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestUniqueMiddlewareKey: enqueue middleware may not move a unique job to
// another partition key (its unique key and shard include it).
func TestUniqueMiddlewareKey(t *testing.T) {
	t.Parallel()
	mw := EnqueueMiddlewareFunc(func(ctx context.Context, jobs []*InsertJob, next func(context.Context) ([]JobID, error)) ([]JobID, error) {
		for _, j := range jobs {
			j.Key = Ptr(int64(3))
		}
		return next(ctx)
	})
	b := setup(t, Config{Middleware: []JobMiddleware{mw}})
	_, err := b.c.Enqueue(b.ctx, "t.X", syncArgs{}, Opts{UniqueKey: "k"})
	if !errors.Is(err, ErrInvalidUnique) {
		t.Errorf("Enqueue = %v; want ErrInvalidUnique", err)
	}
	if _, err := b.c.Enqueue(b.ctx, "t.X", syncArgs{}, Opts{}); err != nil {
		t.Errorf("plain Enqueue through the middleware: %v", err)
	}
}

// BenchmarkEnqueueUnique compares concurrent single enqueues of plain and
// unique jobs (distinct keys, so every unique insert stores a job), and
// duplicates of one held key:
//
//	go test -run XXX -bench EnqueueUnique -benchtime 2000x .
func BenchmarkEnqueueUnique(b *testing.B) {
	for _, backend := range []string{"SQLite", "PostgreSQL"} {
		for _, mode := range []string{"Plain", "Unique", "Duplicate"} {
			b.Run(backend+"/"+mode, func(b *testing.B) {
				cfg := Config{Logger: slog.New(slog.DiscardHandler)}
				if backend == "PostgreSQL" {
					dsn := pgTestDSN(b)
					cfg.Store = pgTestStore(b, dsn, pgTestSchema(b, dsn))
				} else {
					cfg.Dir, cfg.Shards = b.TempDir(), 6
				}
				c, err := Open(b.Context(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				var n atomic.Int64
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := n.Add(1)
						o := Opts{}
						switch mode {
						case "Unique":
							o.UniqueKey = strconv.FormatInt(i, 10)
						case "Duplicate":
							o.UniqueKey = "held"
						}
						if _, err := c.Enqueue(b.Context(), "t.Bench", syncArgs{User: i}, o); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}

// TestEnqueueFile_Unique: records with one unique_key store one job, and
// EnqueueFile counts only what it stored.
func TestEnqueueFile_Unique(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shards: 3})
	path := t.TempDir() + "/jobs.jsonl"
	lines := `{"task": "t.R", "payload": {"n": 1}, "unique_key": "a"}
{"task": "t.R", "payload": {"n": 2}, "unique_key": "a"}
{"task": "t.R", "payload": {"n": 3}}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := b.c.EnqueueFile(b.ctx, path, nil)
	if err != nil || n != 2 {
		t.Fatalf("EnqueueFile = %d, %v; want 2 stored", n, err)
	}
	if n, err := b.c.EnqueueFile(b.ctx, path, nil); err != nil || n != 1 {
		t.Errorf("EnqueueFile again = %d, %v; want 1 (the plain record)", n, err)
	}
}
